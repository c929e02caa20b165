/**
 * The runtime as a process: reads its environment (`MESH_TOOL_MODULES`, `MESH_BROKER_FILE`,
 * optionally `MESH_RUNTIME_STATUS` and the operator variables), serves until SIGTERM or SIGINT,
 * then stops every module within a grace period. `main.ts` runs it from this package; the shipped
 * `node-tools` bundle runs it from one file that is also its workers' bootstrap.
 *
 * A standby (`MESH_RUNTIME_STANDBY=1`) does all of that but serve ahead of time, and serves when
 * the host says so (standby.ts): with the environment it was started with, or with the one the
 * host hands it over its IPC channel (the runtime's next composition), connecting again only
 * when the credential moved.
 */
import { readFile } from "node:fs/promises";
import { MeshBus } from "@mesh/bus";
import { runUntilSignal } from "@mesh/kit";
import { Env, ErrorCode, MeshError } from "@mesh/protocol";
import { Runtime, moduleEnv, spareFor } from "./runtime.js";
import type { SpareWorker } from "./spare-worker.js";
import { parseToolModules } from "./tool-modules.js";
import { IdleEnv, StandbyEnv, StatusEnv, idleFromEnv, tuningFromEnv } from "./env.js";
import { standBy, type Handover } from "./standby.js";
import { DEFAULT_TUNING, type WorkerTuning } from "./worker-tuning.js";

export interface RuntimeProcessOptions {
  /** The file module workers start from; see RuntimeOptions.workerFile. */
  readonly workerFile?: URL;
}

/** What the process reads from its environment. */
interface ProcessConfig {
  readonly credentialFile: string;
  readonly modules: ReadonlyMap<string, readonly string[]>;
  readonly statusFile: string | undefined;
  readonly tuning: Partial<WorkerTuning>;
  readonly idle: ReadonlyMap<string, number>;
}

function configOf(env: NodeJS.ProcessEnv): ProcessConfig {
  const credentialFile = env[Env.brokerFile];
  if (credentialFile === undefined || credentialFile === "") {
    throw new MeshError(
      ErrorCode.USAGE,
      `${Env.brokerFile} is not set; the host sets it to the runtime's credential file (node-tools' broker secret)`,
    );
  }
  // `{pid}` in the path is this process's: a runtime replacing another writes a file of its own.
  const statusFile = env[StatusEnv]?.replaceAll("{pid}", String(process.pid));
  return {
    credentialFile,
    modules: parseToolModules(env[Env.toolModules] ?? ""),
    statusFile: statusFile === "" ? undefined : statusFile,
    tuning: tuningFromEnv(env),
    idle: idleFromEnv(env[IdleEnv]),
  };
}

/** The process's connection and spare worker, and the credential the connection was made with. */
interface Prepared {
  bus: MeshBus;
  credential: string;
  spare: SpareWorker;
}

/** Runs the runtime until it is told to stop; resolves to the exit code. */
export async function runRuntimeProcess(options: RuntimeProcessOptions = {}): Promise<number> {
  let config = configOf(process.env);
  const workerFile = options.workerFile === undefined ? {} : { workerFile: options.workerFile };
  const credential = await readFile(config.credentialFile, "utf8").catch(() => "");
  const bus = await MeshBus.connectWithFile(config.credentialFile, { waitForBus: true });
  const prepared: Prepared = {
    bus,
    credential,
    spare: spareFor({ tuning: config.tuning, ...workerFile }),
  };
  let takeover: string | undefined;
  if (process.env[StandbyEnv] === "1") {
    const handover = await standBy(prepared.spare);
    if (handover === undefined) {
      await prepared.spare.close();
      await prepared.bus.close();
      return 0;
    }
    takeover = new Date().toISOString();
    if (handover.env !== undefined) config = await takeEnv(handover.env, prepared, workerFile);
  }
  const runtime = Runtime.create({
    bus: prepared.bus,
    modules: config.modules,
    idle: config.idle,
    tuning: config.tuning,
    spare: prepared.spare,
    ...(takeover === undefined ? {} : { takeover }),
    ...(config.statusFile === undefined ? {} : { statusFile: config.statusFile }),
    ...workerFile,
  });
  const modules = config.modules;
  process.stderr.write(
    modules.size === 0
      ? `[node-tools] ${Env.toolModules} names no module: serving nothing on ${runtime.node} (pid ${process.pid})\n`
      : `[node-tools] serving ${[...modules.keys()].join(", ")} on ${runtime.node} (pid ${process.pid})\n`,
  );
  // The calls in flight have their deadlines; past the longest one, nothing is left to wait for.
  const graceMs = (config.tuning.maxTimeoutMs ?? DEFAULT_TUNING.maxTimeoutMs) + 5_000;
  await runUntilSignal(
    {
      name: "node-tools",
      graceMs,
      doing: "draining (calls in flight finish), then stopping",
      log: (line) => process.stderr.write(`[node-tools] ${line}\n`),
    },
    // The bus closes inside the stop, so the grace period still bounds a close that hangs.
    async (signal) => {
      try {
        await runtime.run({ signal });
      } finally {
        await prepared.bus.close();
      }
    },
  );
  return 0;
}

/**
 * Takes the environment the host handed over (the runtime's next composition): the modules,
 * the status file and the tuning are read from it; the connection is made again only when the
 * credential moved (a new grant), the spare worker booted again only when what module code sees
 * moved.
 */
async function takeEnv(
  env: NonNullable<Handover["env"]>,
  prepared: Prepared,
  workerFile: { workerFile?: URL },
): Promise<ProcessConfig> {
  const seenBefore = JSON.stringify(moduleEnv(process.env));
  const tuningBefore = JSON.stringify(configOf(process.env).tuning);
  for (const name of env.unset) Reflect.deleteProperty(process.env, name);
  Object.assign(process.env, env.set);
  const config = configOf(process.env);
  const credential = await readFile(config.credentialFile, "utf8").catch(() => "");
  if (credential !== prepared.credential || credential === "") {
    const fresh = await MeshBus.connectWithFile(config.credentialFile, { waitForBus: true });
    const old = prepared.bus;
    prepared.bus = fresh;
    prepared.credential = credential;
    void old.close().catch(() => undefined);
  }
  if (
    JSON.stringify(moduleEnv(process.env)) !== seenBefore ||
    JSON.stringify(config.tuning) !== tuningBefore
  ) {
    const old = prepared.spare;
    prepared.spare = spareFor({ tuning: config.tuning, ...workerFile });
    void old.close();
  }
  return config;
}
