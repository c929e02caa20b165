/**
 * The runtime as a process: reads its environment (`MESH_TOOL_MODULES`, `MESH_BROKER_FILE`,
 * optionally `MESH_RUNTIME_STATUS` and the operator variables), serves until SIGTERM or SIGINT,
 * then stops every module within a grace period. It goes through the kit's process shell: its
 * exit code is the shell's, a failure said once with its code (`[node-tools] failed: … [CODE]`).
 * `main.ts` runs it from this package; the shipped `node-tools` bundle runs it from one file that
 * is also its workers' bootstrap.
 *
 * A standby (`MESH_RUNTIME_STANDBY=1`) does all of that but serve ahead of time, and serves when
 * the host says so (standby.ts): with the environment it was started with, or with the one the
 * host hands it over its IPC channel (the runtime's next composition), connecting again only
 * when the credential moved.
 */
import { readFile } from "node:fs/promises";
import { MeshBus } from "@mesh/bus";
import { DEFAULT_GRACE_MS, loggerFrom, runProcess, type ProcessContext } from "@mesh/kit";
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

/**
 * What a stop does, asked when the first signal comes: a standby leaves (it serves nothing), a
 * runtime drains its calls within the longest deadline one may have.
 */
interface StopPhase {
  serving: boolean;
  graceMs: number;
}

/** The calls in flight have their deadlines; past the longest one, nothing is left to wait for. */
function drainGraceMs(config: ProcessConfig): number {
  return (config.tuning.maxTimeoutMs ?? DEFAULT_TUNING.maxTimeoutMs) + 5_000;
}

/**
 * Runs the runtime until it is told to stop, through the kit's process shell; resolves to the
 * exit code (0 after a stop, 2 for an environment it cannot use, 1 for any other failure).
 */
export function runRuntimeProcess(options: RuntimeProcessOptions = {}): Promise<number> {
  const stop: StopPhase = {
    serving: process.env[StandbyEnv] !== "1",
    graceMs: DEFAULT_GRACE_MS,
  };
  return runProcess(
    {
      name: "node-tools",
      log: loggerFrom((line) => process.stderr.write(`[node-tools] ${line}\n`)),
      doing: () =>
        stop.serving
          ? "draining (calls in flight finish), then stopping"
          : "leaving (a standby serves nothing)",
      graceMs: () => stop.graceMs,
    },
    (context) => serve(options, context, stop),
  );
}

/** Stands by when asked to, then serves until the signal aborts; closes what it opened. */
async function serve(
  options: RuntimeProcessOptions,
  { signal, log }: ProcessContext,
  stop: StopPhase,
): Promise<void> {
  let config = configOf(process.env);
  if (stop.serving) stop.graceMs = drainGraceMs(config);
  const workerFile = options.workerFile === undefined ? {} : { workerFile: options.workerFile };
  const credential = await readFile(config.credentialFile, "utf8").catch(() => "");
  const bus = await MeshBus.connectWithFile(config.credentialFile, { waitForBus: true, signal });
  const prepared: Prepared = {
    bus,
    credential,
    spare: spareFor({ tuning: config.tuning, ...workerFile }),
  };
  // The bus closes inside the stop, so the grace period still bounds a close that hangs.
  try {
    let takeover: string | undefined;
    if (!stop.serving) {
      const handover = await standBy(prepared.spare, { signal });
      if (handover === undefined) return;
      takeover = new Date().toISOString();
      if (handover.env !== undefined)
        config = await takeEnv(handover.env, prepared, { ...workerFile, signal });
      stop.serving = true;
      stop.graceMs = drainGraceMs(config);
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
    log(
      modules.size === 0
        ? `${Env.toolModules} names no module: serving nothing on ${runtime.node} (pid ${process.pid})`
        : `serving ${[...modules.keys()].join(", ")} on ${runtime.node} (pid ${process.pid})`,
    );
    await runtime.run({ signal });
  } finally {
    await prepared.spare.close();
    await prepared.bus.close();
  }
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
  { signal, ...workerFile }: { workerFile?: URL; signal: AbortSignal },
): Promise<ProcessConfig> {
  const seenBefore = JSON.stringify(moduleEnv(process.env));
  const tuningBefore = JSON.stringify(configOf(process.env).tuning);
  for (const name of env.unset) Reflect.deleteProperty(process.env, name);
  Object.assign(process.env, env.set);
  const config = configOf(process.env);
  const credential = await readFile(config.credentialFile, "utf8").catch(() => "");
  if (credential !== prepared.credential || credential === "") {
    const fresh = await MeshBus.connectWithFile(config.credentialFile, {
      waitForBus: true,
      signal,
    });
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
