/**
 * The version a module's NATS service reports: the module's build, so `nats micro ls` and
 * `$SRV.INFO` say which build answers. A service version must be semver (the services client
 * refuses anything else), so the build id travels as semver build metadata: `0.0.0+<build>`.
 */
import { BoundKey } from "@mesh/protocol";
import type { Provisioner } from "./provisioner.js";

/** Build metadata is dot-separated `[0-9A-Za-z-]` identifiers; a build id is one of them. */
const BUILD_METADATA = /^[0-9A-Za-z-]+$/;

/** `0.0.0+<build>` for a build id; undefined for anything that is not one. */
export function versionOfBuild(build: unknown): string | undefined {
  return typeof build === "string" && BUILD_METADATA.test(build) ? `0.0.0+${build}` : undefined;
}

/**
 * Asks the node's provisioner for the module's bound `build` (as the module) and returns it as a
 * version; `fallback` (the runtime's own) when the host names no build — a module the runtime
 * was started with by hand, or a host from before builds were bound.
 */
export async function serviceVersion(
  provisioner: Pick<Provisioner, "get">,
  module: string,
  fallback: string,
): Promise<string> {
  try {
    const build = await provisioner.get(module, { kind: "bound", key: BoundKey.build });
    return versionOfBuild(build) ?? fallback;
  } catch {
    return fallback;
  }
}
