/**
 * The message protocol between the runtime's main thread and a module's worker, over the
 * worker's `parentPort`. Both sides check `v`: a worker built against another version of this
 * protocol is refused at load with both versions named, rather than misread.
 *
 * The runtime knows which worker a message came from by the port it arrived on; nothing in these
 * messages names a module, and a field that did would not be read.
 *
 * Also the in-worker contract between the worker's bootstrap and a module's definition
 * ({@link MODULE_BRAND}): a module bundle carries its own copy of this SDK, so the bootstrap
 * recognises a definition by a registered symbol and a version, never by class identity.
 */
import { ReplyCode } from "@mesh/protocol/errors";

/** The version of both contracts; bumped on any change a peer could misread.
 *
 * ```ts
 * if (message.v !== PROTOCOL_VERSION) throw new Error(`protocol ${message.v} is not ${PROTOCOL_VERSION}`);
 * ```
 */
export const PROTOCOL_VERSION = 1;

/** The kinds of value a module's code may ask for. `secret` is always refused.
 *
 * ```ts
 * const kind: ProvisionKind = "bound";
 * ```
 */
export type ProvisionKind = "config" | "bound" | "secret";

/** What a watch hands: the value, or why it is no longer answered.
 *
 * ```ts
 * for await (const item of ctx.provision.watch("config", "greeting")) {
 *   if ("refused" in item) ctx.log.warn(item.refused);
 *   else greeting = item.value;
 * }
 * ```
 */
export type ProvisionItem = { readonly value: unknown } | { readonly refused: string };

/** The codes a tool's failure may carry on the bus: the protocol's closed table of reply codes,
 * itself (its errors entry only, which imports nothing, so a worker loads no schemas).
 *
 * ```ts
 * throw new ToolError(ToolErrorCode.REFUSED, "only the owner may close an order");
 * ```
 */
export const ToolErrorCode = ReplyCode;
export type ToolErrorCode = ReplyCode;

/**
 * How loud a module's log line is.
 *
 * ```ts
 * const level: LogLevel = "warn";
 * host.log(level, "the cache is cold");
 * ```
 */
export type LogLevel = "info" | "warn" | "error";

/** A tool as the worker reports it after loading.
 *
 * ```ts
 * const info: ToolInfo = { name: "add", description: "Adds.", input: { type: "object" } };
 * ```
 */
export interface ToolInfo {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the input. */
  readonly input: Record<string, unknown>;
  /** JSON Schema of the output, when the tool declares one. */
  readonly output?: Record<string, unknown>;
}

/** What module code asks the runtime for, and the parameters of each.
 *
 * ```ts
 * const params: AskParams["provision.get"] = { kind: "config", key: "greeting" };
 * const op: AskOp = "provision.get";
 * ```
 */
export interface AskParams {
  "provision.get": { kind: string; key: string };
  "provision.watch": { kind: string; key: string };
  "provision.unwatch": { watch: number };
  condition: { name: string; level: string; message: string };
  "state.get": { state: string; key: string };
  "state.put": { state: string; key: string; value: unknown };
  "state.delete": { state: string; key: string };
  "state.keys": { state: string; filter?: string };
}
export type AskOp = keyof AskParams;

/** Worker → runtime.
 *
 * ```ts
 * const loaded: FromWorker = { v: 1, t: "loaded", tools: [] };
 * ```
 */
export type FromWorker =
  | { v: 1; t: "loaded"; tools: ToolInfo[] }
  | { v: 1; t: "load-failed"; error: string }
  | { v: 1; t: "result"; id: number; value: unknown }
  | { v: 1; t: "failed"; id: number; code: ToolErrorCode; message: string; detail?: string }
  | { v: 1; t: "ask"; id: number; op: AskOp; params: unknown }
  | { v: 1; t: "log"; level: LogLevel; text: string }
  | { v: 1; t: "pong"; seq: number; memory?: { heap: number; external: number } }
  | { v: 1; t: "over-memory"; memory: { heap: number; external: number } }
  | { v: 1; t: "self-signal"; pid: number; signal: string }
  | { v: 1; t: "spare-ready" };

/** Runtime → worker.
 *
 * ```ts
 * const call: ToWorker = { v: 1, t: "call", id: 1, tool: "add", input: { a: 1, b: 2 }, timeoutMs: 10_000 };
 * ```
 */
export type ToWorker =
  | { v: 1; t: "call"; id: number; tool: string; input: unknown; timeoutMs: number }
  | { v: 1; t: "cancel"; id: number }
  | { v: 1; t: "answer"; id: number; value: unknown }
  | { v: 1; t: "refusal"; id: number; code: ToolErrorCode; message: string }
  | { v: 1; t: "watched"; watch: number; item: ProvisionItem }
  | { v: 1; t: "ping"; seq: number }
  | { v: 1; t: "stop" }
  | { v: 1; t: "start"; start: WorkerStart };

/** What the runtime hands a worker at start (`workerData`).
 *
 * ```ts
 * const start: WorkerStart = { v: 1, module: "alpha", node: "n1", entries: ["/var/lib/mesh/bundles/alpha/tools/index.js"] };
 * new Worker(new URL(import.meta.resolve("@mesh/sdk/worker")), { workerData: start });
 * ```
 */
export interface WorkerStart {
  readonly v: 1;
  readonly module: string;
  readonly node: string;
  /** Absolute paths of the module's entry files, in the order the runtime was given them. */
  readonly entries: readonly string[];
  /**
   * Memory outside the V8 heap (Buffers, ArrayBuffers) the module may hold, and how often the
   * bootstrap measures it; over it, the bootstrap says `over-memory` and the runtime ends the
   * worker. Absent: not measured.
   */
  readonly external?: { readonly limitBytes: number; readonly probeMs: number };
}

/**
 * What a **spare** worker is started with: the runtime keeps one booted ahead (its bootstrap and
 * the provided modules loaded, no module code), and hands it a module with a `start` message when
 * one is needed (an idle module called, a module restarted), so that start costs only the
 * module's own code.
 *
 * ```ts
 * const spare: WorkerSpare = { v: 1, spare: true };
 * ```
 */
export interface WorkerSpare {
  readonly v: 1;
  readonly spare: true;
  readonly external?: WorkerStart["external"];
}

/**
 * Where the bootstrap puts the modules the runtime provides to module code (`@mesh/sdk`, `zod`),
 * before any module code loads: a tools bundle built by the mesh's builder imports them from here
 * instead of carrying its own copies.
 *
 * ```ts
 * const { z } = (globalThis as Record<symbol, Record<string, any>>)[PROVIDED_MODULES]["zod"];
 * ```
 */
export const PROVIDED_MODULES: unique symbol = Symbol.for("mesh.runtime.provided") as never;

/** The modules the runtime provides, by import specifier.
 *
 * ```ts
 * const provided = PROVIDED_SPECIFIERS.includes("zod"); // true
 * ```
 */
export const PROVIDED_SPECIFIERS = ["@mesh/sdk", "zod"] as const;

// ---------------------------------------------------------------------------------------------
// In the worker: the bootstrap and a module's definition

/** The registered symbol a module definition carries, with {@link PROTOCOL_VERSION} as value.
 *
 * ```ts
 * const isModule = (value: object): boolean => MODULE_BRAND in value;
 * ```
 */
export const MODULE_BRAND: unique symbol = Symbol.for("mesh.sdk.module") as never;

/** What the bootstrap gives a definition: the raw ways to reach the runtime.
 *
 * ```ts
 * await tool.invoke({ a: 1 }, { host, signal: AbortSignal.timeout(1_000) });
 * await host.ask("provision.get", { kind: "config", key: "greeting" });
 * ```
 */
export interface WorkerHost {
  readonly module: string;
  readonly node: string;
  ask<Op extends AskOp>(op: Op, params: AskParams[Op], signal?: AbortSignal): Promise<unknown>;
  /** Starts a watch; items arrive through `onItem` until `stop()`. Rejects when refused at once. */
  watch(
    kind: string,
    key: string,
    onItem: (item: ProvisionItem) => void,
  ): Promise<{ stop(): void }>;
  log(level: LogLevel, text: string): void;
}

/** A tool as a definition exposes it to the bootstrap.
 *
 * ```ts
 * const result = await tool.invoke(input, { host, signal });
 * ```
 */
export interface BrandedTool {
  readonly info: ToolInfo;
  /** Validates input, runs the handler, validates output; throws a ToolError to refuse. */
  invoke(input: unknown, call: { host: WorkerHost; signal: AbortSignal }): Promise<unknown>;
}

/** A module's definition, as the bootstrap reads it off an entry's default export.
 *
 * ```ts
 * const { default: definition } = (await import(entry)) as { default: BrandedModule };
 * for (const tool of definition.tools) console.log(tool.info.name);
 * ```
 */
export interface BrandedModule {
  readonly [MODULE_BRAND]: number;
  readonly tools: readonly BrandedTool[];
  /** Runs once after load, with a signal that aborts when the module is unloaded. */
  start?(call: { host: WorkerHost; signal: AbortSignal }): Promise<void>;
}
