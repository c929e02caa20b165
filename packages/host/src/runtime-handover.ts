/**
 * The runtime's restart without a gap (docs/architecture.md, "The host"): when its composition
 * moves, the new runtime process starts beside the old one and registers its services in the same
 * queue groups; the host reads the new one's status file until every module the old one served is
 * loaded in the new one (or failed to load there, or the deadline passed), and only then is the
 * old one drained. Each runtime writes a status file of its own, named by its pid, so two of them
 * never write over each other.
 */
import { watch } from "node:fs";
import { readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { sayCondition, type MeshBus } from "@mesh/bus";
import { within } from "@mesh/kit";
import { Env, RUNTIME_MODULE, RUNTIME_PROCESS_ID, RuntimeStatusFile } from "@mesh/protocol";
import type { ToolsFacts } from "./health.js";
import type { ProcessSpec, Supervisor } from "./supervisor.js";

/** The status file's name as the host hands it to the runtime: `{pid}` is the runtime's own. */
export const RUNTIME_STATUS_NAME = "node-tools.{pid}.status.json";

/** How long a new runtime has to load what the old one served before the old one is stopped anyway. */
export const DEFAULT_HANDOVER_MS = 30_000;

/** How often the status file is read when no change event came (a file system without them). */
const BACKSTOP_MS = 100;

/** The status file of the runtime with `pid`. */
export function runtimeStatusPath(root: string, pid: number): string {
  return join(root, "run", RUNTIME_STATUS_NAME.replace("{pid}", String(pid)));
}

/** What the runtime with `pid` last wrote, or undefined when it wrote nothing readable yet. */
export async function readRuntimeStatus(
  root: string,
  pid: number | undefined,
): Promise<RuntimeStatusFile | undefined> {
  if (pid === undefined) return undefined;
  const text = await readFile(runtimeStatusPath(root, pid), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const parsed = RuntimeStatusFile.safeParse(JSON.parse(text));
    return parsed.success && parsed.data.pid === pid ? parsed.data : undefined;
  } catch {
    return undefined; // never half-written (the runtime renames), but not ours to trust blindly
  }
}

/** The modules a runtime's status says are loaded (serving, or idle after serving). */
export function loadedIn(status: RuntimeStatusFile | undefined): string[] {
  return Object.values(status?.modules ?? {})
    .filter((m) => m.state === "serving" || m.state === "idle")
    .map((m) => m.module)
    .sort();
}

/** A module the new runtime did not bring up in time, and how it stands there. */
export interface NotUp {
  readonly module: string;
  readonly state: string;
  readonly error?: string;
}

/**
 * Waits until the runtime `pid()` names (it follows a restart of the new one) says each of
 * `modules` is no longer starting: loaded, or failed to load (which waiting longer would not
 * change). Resolves at the deadline or on `signal` too; returns the modules not serving there.
 */
export async function waitForRuntime(options: {
  readonly root: string;
  readonly pid: () => number | undefined;
  readonly modules: readonly string[];
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
}): Promise<NotUp[]> {
  const { root, modules } = options;
  const notUp = (status: RuntimeStatusFile | undefined): NotUp[] =>
    modules.flatMap((module) => {
      const m = status?.modules[module];
      if (m?.state === "serving" || m?.state === "idle") return [];
      return [
        { module, state: m?.state ?? "not reported", ...(m?.error ? { error: m.error } : {}) },
      ];
    });
  const settled = (status: RuntimeStatusFile | undefined): boolean =>
    status !== undefined &&
    modules.every((module) => {
      const state = status.modules[module]?.state;
      return state !== undefined && state !== "starting";
    });
  const until = Date.now() + options.deadlineMs;
  // The folder's change events wake the next look at once; the backstop is for a file system
  // that does not deliver them.
  let changed: () => void = () => undefined;
  let watcher: ReturnType<typeof watch> | undefined;
  try {
    watcher = watch(join(root, "run"), () => changed());
    watcher.on("error", () => undefined);
  } catch {
    watcher = undefined;
  }
  let last: RuntimeStatusFile | undefined;
  try {
    for (;;) {
      // Armed before the look, so a change while the file is read wakes the next one.
      const next = new Promise<void>((resolve) => (changed = resolve));
      last = await readRuntimeStatus(root, options.pid());
      const left = until - Date.now();
      if (settled(last) || left <= 0 || options.signal?.aborted === true) break;
      await within(next, Math.min(BACKSTOP_MS, left), undefined, {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    }
  } finally {
    watcher?.close();
  }
  last = await readRuntimeStatus(root, options.pid());
  return notUp(last);
}

/**
 * Each module's facts from the runtime running now; while an old one drains beside it, a module
 * the new one is still starting is reported as the old one serves it, since the old one answers.
 */
export function mergedToolsFacts(
  current: RuntimeStatusFile | undefined,
  retiring: RuntimeStatusFile | undefined,
  module: string,
): ToolsFacts | undefined {
  const now = current?.modules[module];
  const before = retiring?.modules[module];
  const beforeServed = before?.state === "serving" || before?.state === "idle";
  const pick = (now === undefined || now.state === "starting") && beforeServed ? before : now;
  if (pick === undefined) return undefined;
  return { state: pick.state, ...(pick.error === undefined ? {} : { error: pick.error }) };
}

/** Removes the status files of runtimes that are gone: every one but the supervisor's now. */
export async function pruneRuntimeStatus(
  root: string,
  supervisor: Supervisor | undefined,
): Promise<void> {
  if (supervisor === undefined) return;
  const keep = new Set<number>();
  for (const pid of [
    supervisor.identity(RUNTIME_PROCESS_ID)?.pid,
    supervisor.retiring(RUNTIME_PROCESS_ID)?.pid,
  ])
    if (pid !== undefined) keep.add(pid);
  const folder = join(root, "run");
  const names = await readdir(folder).catch(() => [] as string[]);
  const [prefix, suffix] = RUNTIME_STATUS_NAME.split("{pid}") as [string, string];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith(suffix)) continue;
    const pid = Number(name.slice(prefix.length, name.length - suffix.length));
    if (Number.isSafeInteger(pid) && !keep.has(pid))
      await rm(join(folder, name), { force: true }).catch(() => undefined);
  }
}

/** How long an old runtime may drain between TERM and KILL: the longest call deadline, and 10 s. */
export const DEFAULT_DRAIN_MS = 310_000;

/**
 * Replaces the runtime: records the new one (`record`), starts it beside the old one, waits until
 * it serves every module the old one had loaded that it is to serve too (or the deadline), then
 * leaves the old one to drain. A module the new one did not bring up is said.
 */
export async function replaceRuntime(o: {
  readonly root: string;
  readonly node: string;
  readonly supervisor: Supervisor;
  readonly spec: ProcessSpec;
  /** The modules the new runtime serves. */
  readonly modules: readonly string[];
  readonly record: () => Promise<void>;
  readonly readyMs: number;
  readonly drainMs: number;
  readonly signal: AbortSignal;
  readonly bus: () => MeshBus | undefined;
  readonly log: (line: string) => void;
}): Promise<void> {
  const { supervisor, spec } = o;
  const before = await readRuntimeStatus(o.root, supervisor.identity(spec.id)?.pid);
  const modules = loadedIn(before).filter((m) => o.modules.includes(m));
  await o.record();
  let notUp: NotUp[] = [];
  const { retired } = await supervisor.replace(
    spec,
    async () => {
      notUp = await waitForRuntime({
        root: o.root,
        pid: () => supervisor.identity(spec.id)?.pid,
        modules,
        deadlineMs: o.readyMs,
        signal: o.signal,
      });
    },
    o.drainMs,
  );
  for (const m of notUp) void sayNotUp(o, m);
  void retired.then(() => pruneRuntimeStatus(o.root, supervisor));
}

/** Says a module the old runtime served that the new one did not bring up. */
async function sayNotUp(
  o: {
    readonly node: string;
    readonly readyMs: number;
    readonly bus: () => MeshBus | undefined;
    readonly log: (line: string) => void;
  },
  m: NotUp,
): Promise<void> {
  const how =
    m.state === "failing"
      ? `failed to load there (${(m.error ?? "").split("\n", 1)[0]})`
      : `was still ${m.state} after ${o.readyMs} ms`;
  const message = `${m.module} served in the runtime being replaced and ${how}; the old runtime was stopped anyway, so nothing serves ${m.module} on ${o.node} until it loads`;
  o.log(message);
  const bus = o.bus();
  if (bus === undefined) return;
  try {
    await sayCondition(bus, {
      module: RUNTIME_MODULE,
      node: o.node,
      name: "handover",
      level: "warning",
      message,
    });
  } catch (error) {
    o.log(`the condition about ${m.module} was not said: ${(error as Error).message}`);
  }
}

/** The modules a runtime process resource serves (`MESH_TOOL_MODULES`' names), in order. */
export function toolModulesOf(resource: {
  readonly env: Readonly<Record<string, string>>;
}): string[] {
  const out = new Set<string>();
  for (const entry of (resource.env[Env.toolModules] ?? "").split(",")) {
    const module = entry.slice(0, entry.indexOf("="));
    if (module !== "") out.add(module);
  }
  return [...out];
}
