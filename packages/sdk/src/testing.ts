/**
 * `@mesh/sdk/testing`: runs a module's tools without a mesh, for its own tests (`node --test`).
 * A fake runtime keeps config values, bound values and states in memory, records conditions and
 * log lines, and lets a test change a config value while a watch runs.
 *
 * ```ts
 * import { testModule } from "@mesh/sdk/testing";
 * import notes from "./tools.js";
 * const mesh = testModule(notes, { config: { max: 3 } });
 * assert.deepEqual(await mesh.call("add", { text: "hi" }), { count: 1 });
 * mesh.setConfig("max", 5);
 * ```
 */
import { ToolError } from "./tool-error.js";
import {
  ToolErrorCode,
  type AskOp,
  type AskParams,
  type BrandedModule,
  type ProvisionItem,
  type WorkerHost,
} from "./worker-protocol.js";

export interface TestModuleOptions {
  readonly module?: string;
  readonly node?: string;
  /** The module's config values, by key (what the manifest's defaults and the operator set). */
  readonly config?: Record<string, unknown>;
  /** Bound values (`node` and `servers` are filled in). */
  readonly bound?: Record<string, unknown>;
}

export interface TestModule {
  /** Calls a tool by name, as the runtime would: input validated, output checked. */
  call(tool: string, input?: unknown, options?: { signal?: AbortSignal }): Promise<unknown>;
  /** Runs the module's `start`, if it has one; stop it with the signal. */
  start(signal?: AbortSignal): Promise<void>;
  /** Changes a config value (undefined: no longer answered); watches see it at once. */
  setConfig(key: string, value: unknown): void;
  /** A state's contents, by key, as the module wrote it. */
  state(name: string): Map<string, unknown>;
  readonly conditions: { name: string; level: string; message: string }[];
  readonly logs: { level: string; text: string }[];
}

/** A fake runtime around a module's default export (what `defineModule` returned). */
export function testModule(definition: BrandedModule, options: TestModuleOptions = {}): TestModule {
  const module = options.module ?? "test-module";
  const node = options.node ?? "test-node";
  const config = new Map(Object.entries(options.config ?? {}));
  const bound = new Map(Object.entries({ node, servers: [], ...options.bound }));
  const states = new Map<string, Map<string, unknown>>();
  const watchers = new Set<{ kind: string; key: string; onItem: (i: ProvisionItem) => void }>();
  const conditions: TestModule["conditions"] = [];
  const logs: TestModule["logs"] = [];
  const stateOf = (name: string): Map<string, unknown> => {
    let s = states.get(name);
    if (s === undefined) states.set(name, (s = new Map<string, unknown>()));
    return s;
  };
  const value = (kind: string, key: string): ProvisionItem => {
    const from = kind === "config" ? config : kind === "bound" ? bound : undefined;
    if (from === undefined) return { refused: `${kind} is not answered: secrets are files` };
    return from.has(key) ? { value: from.get(key) } : { refused: `no ${kind} value ${key}` };
  };
  const host: WorkerHost = {
    module,
    node,
    ask: (op, params) => fakeAsk(op, params, { value, stateOf, conditions }),
    watch: (kind, key, onItem) => {
      const first = value(kind, key);
      if (!("value" in first))
        return Promise.reject(new ToolError(ToolErrorCode.NOT_FOUND, first.refused));
      const watcher = { kind, key, onItem };
      watchers.add(watcher);
      queueMicrotask(() => onItem(first));
      return Promise.resolve({ stop: () => void watchers.delete(watcher) });
    },
    log: (level, text) => void logs.push({ level, text }),
  };
  return {
    call: async (tool, input = {}, callOptions = {}) => {
      const found = definition.tools.find((t) => t.info.name === tool);
      if (found === undefined)
        throw new ToolError(ToolErrorCode.NOT_FOUND, `the module has no tool ${tool}`);
      return found.invoke(input, {
        host,
        signal: callOptions.signal ?? new AbortController().signal,
      });
    },
    start: async (signal = new AbortController().signal) => {
      await definition.start?.({ host, signal });
    },
    setConfig: (key, next) => {
      if (next === undefined) config.delete(key);
      else config.set(key, next);
      for (const w of watchers)
        if (w.kind === "config" && w.key === key) w.onItem(value("config", key));
    },
    state: stateOf,
    conditions,
    logs,
  };
}

/** What the fake runtime answers to one ask of module code. */
function fakeAsk(
  op: AskOp,
  params: AskParams[AskOp],
  fake: {
    value: (kind: string, key: string) => ProvisionItem;
    stateOf: (name: string) => Map<string, unknown>;
    conditions: TestModule["conditions"];
  },
): Promise<unknown> {
  const p = params as Record<string, unknown>;
  const state = typeof p.state === "string" ? fake.stateOf(p.state) : undefined;
  switch (op) {
    case "provision.get": {
      const item = fake.value(String(p.kind), String(p.key));
      if ("value" in item) return Promise.resolve(item.value);
      return Promise.reject(new ToolError(ToolErrorCode.NOT_FOUND, item.refused));
    }
    case "condition":
      fake.conditions.push({
        name: String(p.name),
        level: String(p.level),
        message: String(p.message),
      });
      return Promise.resolve(null);
    case "state.get":
      return Promise.resolve(state?.get(String(p.key)));
    case "state.put":
      state?.set(String(p.key), p.value);
      return Promise.resolve(null);
    case "state.delete":
      state?.delete(String(p.key));
      return Promise.resolve(null);
    case "state.keys":
      return Promise.resolve([...(state?.keys() ?? [])].sort());
    default:
      return Promise.reject(new ToolError(ToolErrorCode.REFUSED, `${op} is not faked here`));
  }
}
