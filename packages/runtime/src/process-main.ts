/**
 * The runtime as a process: reads its environment (`MESH_TOOL_MODULES`, `MESH_BROKER_FILE`,
 * optionally `MESH_RUNTIME_STATUS` and the operator variables), serves until SIGTERM or SIGINT,
 * then stops every module within a grace period. `main.ts` runs it from this package; the shipped
 * `node-tools` bundle runs it from one file that is also its workers' bootstrap.
 */
import { MeshBus, runUntilSignal } from "@mesh/bus";
import { Env, ErrorCode, MeshError } from "@mesh/protocol";
import { Runtime, spareFor } from "./runtime.js";
import type { SpareWorker } from "./spare-worker.js";
import { parseToolModules } from "./tool-modules.js";
import { IdleEnv, StandbyEnv, StatusEnv, idleFromEnv, tuningFromEnv } from "./env.js";
import { DEFAULT_TUNING } from "./worker-tuning.js";

export interface RuntimeProcessOptions {
  /** The file module workers start from; see RuntimeOptions.workerFile. */
  readonly workerFile?: URL;
}

/** Runs the runtime until it is told to stop; resolves to the exit code. */
export async function runRuntimeProcess(options: RuntimeProcessOptions = {}): Promise<number> {
  const credentialFile = process.env[Env.brokerFile];
  if (credentialFile === undefined || credentialFile === "") {
    throw new MeshError(
      ErrorCode.USAGE,
      `${Env.brokerFile} is not set; the host sets it to the runtime's credential file (node-tools' broker secret)`,
    );
  }
  const modules = parseToolModules(process.env[Env.toolModules] ?? "");
  const bus = await MeshBus.connectWithFile(credentialFile, { waitForBus: true });
  // `{pid}` in the path is this process's: a runtime replacing another writes a file of its own.
  const statusFile = process.env[StatusEnv]?.replaceAll("{pid}", String(process.pid));
  const tuning = tuningFromEnv(process.env);
  const workerFile = options.workerFile === undefined ? {} : { workerFile: options.workerFile };
  const spare = spareFor({ tuning, ...workerFile });
  if (process.env[StandbyEnv] === "1" && !(await standBy(spare))) {
    await spare.close();
    await bus.close();
    return 0;
  }
  const runtime = Runtime.create({
    bus,
    modules,
    idle: idleFromEnv(process.env[IdleEnv]),
    tuning,
    spare,
    ...(statusFile === undefined || statusFile === "" ? {} : { statusFile }),
    ...workerFile,
  });
  process.stderr.write(
    modules.size === 0
      ? `[node-tools] ${Env.toolModules} names no module: serving nothing on ${runtime.node} (pid ${process.pid})\n`
      : `[node-tools] serving ${[...modules.keys()].join(", ")} on ${runtime.node} (pid ${process.pid})\n`,
  );
  // The calls in flight have their deadlines; past the longest one, nothing is left to wait for.
  const graceMs = (tuning.maxTimeoutMs ?? DEFAULT_TUNING.maxTimeoutMs) + 5_000;
  await runUntilSignal(
    {
      name: "node-tools",
      graceMs,
      doing: "draining (calls in flight finish), then stopping",
      log: (line) => process.stderr.write(`[node-tools] ${line}\n`),
    },
    (signal) => runtime.run({ signal }),
  );
  await bus.close();
  return 0;
}

/**
 * A standby: loaded, connected, a spare worker booted; waits for SIGUSR2 (serve: true) or
 * SIGTERM/SIGINT (leave: false). The SIGUSR2 handler is set only now, so the host, which reads
 * whether it is set, never signals a standby that would not survive it.
 */
async function standBy(spare: SpareWorker): Promise<boolean> {
  spare.prepare();
  process.stderr.write(`[node-tools] standing by (pid ${process.pid})\n`);
  const go = await new Promise<boolean>((resolve) => {
    process.once("SIGUSR2", () => resolve(true));
    process.once("SIGTERM", () => resolve(false));
    process.once("SIGINT", () => resolve(false));
  });
  if (go) process.stderr.write(`[node-tools] taking over (pid ${process.pid})\n`);
  return go;
}
