#!/usr/bin/env node
/**
 * `node main.js --node NAME --root DIR --credential FILE`: runs one host until SIGTERM or SIGINT,
 * then stops it gracefully (its processes keep running, for the next host to adopt). `mesh host`
 * is the same through the CLI; this entry lets a supervisor (systemd) or a test start the host
 * without the CLI.
 */
import { parseArgs } from "node:util";
import { runProcess } from "@mesh/kit";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { Host, type HostOptions } from "./host.js";

/**
 * Runs a host until SIGTERM/SIGINT through the kit's process shell; resolves to the exit code
 * once it has stopped (a failure is said once, with its code).
 */
export function runHost(options: HostOptions): Promise<number> {
  return runProcess({ name: "mesh-host" }, async ({ signal }) => {
    const host = await Host.create(options);
    await host.run({ signal });
  });
}

/** The options of the command line; numbers only for tests and tuning. */
export function parseHostArgs(argv: readonly string[]): HostOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      node: { type: "string" },
      root: { type: "string" },
      credential: { type: "string" },
      "healthy-ms": { type: "string" },
      "poll-ms": { type: "string" },
      "heartbeat-ms": { type: "string" },
    },
    strict: true,
  });
  const { node, root, credential } = values;
  if (node === undefined || root === undefined || credential === undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      "the host needs --node NAME --root DIR --credential FILE; the credential is the host's own (user host on its node)",
    );
  }
  const number = (name: string, value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0)
      throw new MeshError(
        ErrorCode.USAGE,
        `--${name} ${JSON.stringify(value)} is not a positive whole number of milliseconds`,
      );
    return n;
  };
  const healthyMs = number("healthy-ms", values["healthy-ms"]);
  const pollMs = number("poll-ms", values["poll-ms"]);
  const heartbeatMs = number("heartbeat-ms", values["heartbeat-ms"]);
  return {
    node,
    root,
    credential,
    ...(healthyMs === undefined ? {} : { health: { healthyMs } }),
    ...(pollMs === undefined ? {} : { pollMs }),
    ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
  };
}

if (import.meta.url === `file://${process.argv[1] ?? ""}`) {
  let options: HostOptions | undefined;
  try {
    options = parseHostArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`mesh host: ${(error as Error).message}\n`);
    process.exitCode = error instanceof MeshError && error.code === ErrorCode.USAGE ? 2 : 1;
  }
  if (options !== undefined) process.exitCode = await runHost(options);
}
