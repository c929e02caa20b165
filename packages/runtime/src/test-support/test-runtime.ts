/**
 * The runtime fixture: a runtime on its own connection (the runtime's credential), serving
 * modules written into a temporary folder, its statuses logged; `stop()` stops it, closes its
 * connection and removes the folder.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MeshBus, type ConnectOptions } from "@mesh/bus";
import { Runtime, type RuntimeOptions } from "../runtime.js";
import { writeModule } from "./modules.js";
import { StatusLog, type TestBus } from "./setup.js";

export interface TestRuntime {
  readonly runtime: Runtime;
  /** The runtime's own connection. */
  readonly bus: MeshBus;
  /** Where its modules were written. */
  readonly dir: string;
  readonly statuses: StatusLog;
  stop(): Promise<void>;
}

export async function startTestRuntime(
  bus: TestBus,
  options: {
    /** The temporary folder's prefix. */
    readonly name: string;
    /** Each module's files (`tools.mjs`, …). */
    readonly modules: Readonly<Record<string, Readonly<Record<string, string>>>>;
    /** The runtime's other options; its log is silent unless given. */
    readonly runtime?: Partial<Omit<RuntimeOptions, "bus" | "modules" | "onStatus">>;
    /** A status file in the folder (`status.json`). */
    readonly statusFile?: boolean;
    readonly connect?: ConnectOptions;
  },
): Promise<TestRuntime> {
  const dir = await mkdtemp(join(tmpdir(), options.name));
  const modules = new Map<string, string[]>();
  for (const [module, files] of Object.entries(options.modules)) {
    modules.set(module, await writeModule(dir, module, files));
  }
  const runtimeBus = await MeshBus.connect(bus.runtimeCredential, options.connect ?? {});
  const statuses = new StatusLog();
  const runtime = Runtime.create({
    log: () => undefined,
    ...options.runtime,
    ...(options.statusFile === true ? { statusFile: join(dir, "status.json") } : {}),
    bus: runtimeBus,
    modules,
    onStatus: statuses.push,
  });
  return {
    runtime,
    bus: runtimeBus,
    dir,
    statuses,
    async stop() {
      await runtime.stop();
      await runtimeBus.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
