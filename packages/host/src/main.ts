#!/usr/bin/env node
/**
 * `node main.js --node NAME --root DIR --credential FILE [options]`: runs one host until SIGTERM
 * or SIGINT, then stops it gracefully (its processes keep running, for the next host to adopt).
 * `mesh host` is the same through the CLI's launcher; this entry is what a host build runs (the
 * `mesh-host` module's bundle, started by a launcher: decision 0200), and lets a test start a host
 * without the CLI. Its arguments are the launcher's contract with every host build: a flag may be
 * added, none changed.
 */
import { parseArgs } from "node:util";
import { runProcess } from "@mesh/kit";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { Host, type HostOptions } from "./host.js";
import { runLaunchedHost } from "./launch/launched-host.js";
import { LauncherLink } from "./launch/launcher-link.js";

/**
 * Runs a host until SIGTERM/SIGINT through the kit's process shell; resolves to the exit code
 * once it has stopped (a failure is said once, with its code). Started by a launcher, it follows
 * the launcher's handovers.
 */
export function runHost(options: HostOptions): Promise<number> {
  return runProcess({ name: "mesh-host" }, async ({ signal }) => {
    const link = LauncherLink.ofThisProcess();
    if (link !== undefined) {
      await runLaunchedHost(options, link, { signal });
      return;
    }
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
      account: { type: "string" },
      adopted: { type: "boolean" },
      "tools-idle": { type: "string" },
      "stop-processes-on-exit": { type: "boolean" },
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
  const number = (name: string, value: string | undefined, zero = false): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || (n === 0 && !zero))
      throw new MeshError(
        ErrorCode.USAGE,
        `--${name} ${JSON.stringify(value)} is not a ${zero ? "whole number" : "positive whole number"}`,
      );
    return n;
  };
  const healthyMs = number("healthy-ms", values["healthy-ms"]);
  const pollMs = number("poll-ms", values["poll-ms"]);
  const heartbeatMs = number("heartbeat-ms", values["heartbeat-ms"]);
  const toolsIdle = number("tools-idle", values["tools-idle"], true);
  return {
    node,
    root,
    credential,
    ...(healthyMs === undefined ? {} : { health: { healthyMs } }),
    ...(pollMs === undefined ? {} : { pollMs }),
    ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
    ...(values.account === undefined ? {} : { account: { name: values.account } }),
    ...(values.adopted === true ? { adopted: true } : {}),
    ...(toolsIdle === undefined ? {} : { runtimeIdleMs: toolsIdle * 1_000 }),
    ...(values["stop-processes-on-exit"] === true ? { stopProcessesOnStop: true } : {}),
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
