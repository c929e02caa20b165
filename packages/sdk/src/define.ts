/**
 * Defining a module's tools. A module's entry file default-exports what {@link defineModule}
 * returns; the runtime loads it in a worker of the module's own and serves each tool on the bus.
 */
import { z } from "zod";
import { ToolError } from "./tool-error.js";
import {
  MODULE_BRAND,
  PROTOCOL_VERSION,
  ToolErrorCode,
  type BrandedModule,
  type BrandedTool,
  type ProvisionItem,
  type WorkerHost,
} from "./worker-protocol.js";

/** The kinds of value a module reads at runtime. Secrets reach a module as files, never here.
 *
 * ```ts
 * const kind: ValueKind = "config";
 * await ctx.provision.get(kind, "greeting");
 * ```
 */
export type ValueKind = "config" | "bound";

/** A logger whose lines go to the runtime's output, prefixed with the module's name.
 *
 * ```ts
 * ctx.log.warn(`the cache is cold; the first call will be slow`);
 * ```
 */
export interface ToolLogger {
  info(text: string): void;
  warn(text: string): void;
  error(text: string): void;
}

/** A module's own state (read-write), or a state it reads (`owner/state`, read-only).
 *
 * ```ts
 * const notes: StateHandle = ctx.state("notes");
 * await notes.put("today", { text: "hello" });
 * const today = await notes.get("today");
 * ```
 */
export interface StateHandle {
  /** The key's value, or undefined when it has none. */
  get(key: string): Promise<unknown>;
  /** Writes the key; REFUSED for a state the module only reads. */
  put(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key with a value, sorted, optionally under a pattern (`a.*`, `a.>`). */
  keys(filter?: string): Promise<string[]>;
}

/** What a handler (or a module's `start`) is given besides its input.
 *
 * ```ts
 * handler: async ({ id }, ctx) => {
 *   ctx.log.info(`${ctx.module} on ${ctx.node} looks up ${id}`);
 *   const res = await fetch(`http://localhost:8080/${id}`, { signal: ctx.signal });
 *   return { status: res.status };
 * };
 * ```
 */
/** The config of a module that gave no schema: any declared key, of unknown type. */
export type UntypedConfig = Record<string, unknown>;

/** A module's config object schema, as `defineModule({ config })` and `defineTool({ config })` take it. */
export type ConfigSchema = z.ZodObject;

/** The config type a schema gives (`UntypedConfig` without one). */
export type ConfigOf<S extends ConfigSchema | undefined> = S extends ConfigSchema
  ? z.output<S>
  : UntypedConfig;

/** What a config watch hands: a value of the key's type, or why it is no longer answered. */
export type ConfigItem<T> = { readonly value: T } | { readonly refused: string };

/**
 * The module's config, typed by the schema the module gave (`ctx.config.get("max")` is a number
 * when the schema says `max: z.number()`); untyped, any declared key is `unknown`. Values come
 * from the manifest's default, the mesh-wide value, or this node's value, whichever is most
 * specific; a typed value that does not match the schema is refused with the reason.
 *
 * ```ts
 * const max = await ctx.config.get("max");
 * for await (const item of ctx.config.watch("max")) if ("value" in item) limit = item.value;
 * ```
 */
export interface ConfigAccess<C> {
  get<K extends keyof C & string>(key: K): Promise<C[K]>;
  watch<K extends keyof C & string>(key: K): AsyncIterableIterator<ConfigItem<C[K]>>;
}

export interface ToolContext<C = UntypedConfig> {
  /** The module whose code this is; the runtime knows it from the worker, not from the code. */
  readonly module: string;
  readonly node: string;
  /** Aborts when the call's deadline passes or the module is being stopped. */
  readonly signal: AbortSignal;
  readonly log: ToolLogger;
  readonly provision: {
    /** The module's value of `kind` under `key`; a ToolError (REFUSED or NOT_FOUND) when not answered. */
    get(kind: ValueKind, key: string): Promise<unknown>;
    /**
     * The value now, then each change, then `{refused}` when it stops being answered (and the
     * value again should it come back). Leaving the loop, or the context's signal aborting,
     * stops the watch. Throws like `get` when the value is not answered at the start.
     */
    watch(kind: ValueKind, key: string): AsyncIterableIterator<ProvisionItem>;
  };
  /** The module's config, typed by its schema: `get(key)` and `watch(key)`. */
  readonly config: ConfigAccess<C>;
  /** Says a condition an operator sees (`mesh conditions`); the last per name is kept. */
  condition(name: string, level: "info" | "warning" | "error", message: string): Promise<void>;
  /** One of the module's own states by name, or a state it reads by `owner/state`. */
  state(name: string): StateHandle;
}

/** A tool's definition, typed from its schemas.
 *
 * ```ts
 * const spec: ToolSpec<typeof input, undefined> = {
 *   name: "ping",
 *   description: "Answers pong.",
 *   input,
 *   handler: async () => "pong",
 * };
 * export const ping = defineTool(spec);
 * ```
 */
export interface ToolSpec<
  I extends z.ZodType,
  O extends z.ZodType | undefined,
  S extends ConfigSchema | undefined = undefined,
> {
  /** `^[a-z][a-z0-9_-]{0,62}$`: the last token of `mesh.tools.<node>.<module>.<tool>`. */
  readonly name: string;
  readonly description: string;
  readonly input: I;
  readonly output?: O;
  /** The module's config schema (the one given to defineModule), so `ctx.config` is typed. */
  readonly config?: S;
  readonly handler: (
    input: z.output<I>,
    ctx: ToolContext<ConfigOf<S>>,
  ) => Promise<O extends z.ZodType ? z.input<O> : unknown>;
}

/** A defined tool: hand it to {@link defineModule}.
 *
 * ```ts
 * const tools: Tool[] = [greet, ping];
 * export default defineModule({ tools });
 * ```
 */
export interface Tool extends BrandedTool {
  readonly name: string;
}

const TOOL_NAME = /^[a-z][a-z0-9_-]{0,62}$/;

/**
 * Defines a tool. The input is validated before the handler runs (a caller with bad input gets
 * INVALID_INPUT naming every path); the output, when a schema is given, before it leaves.
 *
 * ```ts
 * import { defineTool, z } from "@mesh/sdk";
 * export const greet = defineTool({
 *   name: "greet",
 *   description: "Greets someone by name.",
 *   input: z.object({ name: z.string().min(1) }),
 *   output: z.object({ text: z.string() }),
 *   handler: async ({ name }, ctx) => {
 *     const greeting = await ctx.provision.get("config", "greeting");
 *     return { text: `${String(greeting)}, ${name}` };
 *   },
 * });
 * ```
 */
export function defineTool<
  I extends z.ZodType,
  O extends z.ZodType | undefined = undefined,
  S extends ConfigSchema | undefined = undefined,
>(spec: ToolSpec<I, O, S>): Tool {
  if (!TOOL_NAME.test(spec.name)) {
    throw new TypeError(
      `the tool name ${JSON.stringify(spec.name)} does not match ${TOOL_NAME.source}; use lowercase letters, digits, - and _, starting with a letter`,
    );
  }
  const info = {
    name: spec.name,
    description: spec.description,
    input: z.toJSONSchema(spec.input, { unrepresentable: "any" }) as Record<string, unknown>,
    ...(spec.output === undefined
      ? {}
      : {
          output: z.toJSONSchema(spec.output, { unrepresentable: "any", io: "output" }) as Record<
            string,
            unknown
          >,
        }),
  };
  return {
    name: spec.name,
    info,
    async invoke(raw, { host, signal }) {
      const input = spec.input.safeParse(raw);
      if (!input.success) {
        throw new ToolError(
          ToolErrorCode.INVALID_INPUT,
          `the input of ${host.module}/${spec.name} does not match its schema: ${describeIssues(input.error)}; \`mesh tools --module ${host.module}\` shows the schema`,
        );
      }
      const result = await spec.handler(
        input.data,
        contextFor<ConfigOf<S>>(host, signal, spec.config),
      );
      if (spec.output === undefined) return result;
      const output = spec.output.safeParse(result);
      if (!output.success) {
        // The caller did nothing wrong: the module broke its own promise, which is INTERNAL.
        throw new Error(
          `${host.module}/${spec.name} returned output that does not match its output schema: ${describeIssues(output.error)}`,
        );
      }
      return output.data;
    },
  };
}

/** What a module's entry default-exports.
 *
 * ```ts
 * const spec: ModuleSpec = { tools: [greet], start: async (ctx) => ctx.log.info("loaded") };
 * export default defineModule(spec);
 * ```
 */
export interface ModuleSpec<S extends ConfigSchema | undefined = undefined> {
  readonly tools: readonly Tool[];
  /**
   * The module's config as a zod object: its inferred type types `ctx.config`, and the builder
   * checks that its keys and types agree with the manifest's `config`.
   */
  readonly config?: S;
  /**
   * Runs once after the module loads, with a context whose signal aborts when the module is
   * unloaded: the place for long-lived watches. A failure here fails the module's load.
   */
  readonly start?: (ctx: ToolContext<ConfigOf<S>>) => Promise<void>;
}

/**
 * What defineModule returns: the module, and (in types only) its config's type, which the
 * builder compares with the manifest through {@link ModuleConfigOf}.
 */
export type TypedModule<C> = BrandedModule & { readonly __meshConfig?: C };

/**
 * The config type of a tools entry's default export (`typeof import("./tools.js")`), or
 * `Fallback` when its module gave no config schema. The builder uses it; module code need not.
 */
export type ModuleConfigOf<Entry, Fallback> = Entry extends {
  readonly default: { readonly __meshConfig?: infer C };
}
  ? unknown extends C
    ? Fallback
    : [NonNullable<C>] extends [never]
      ? Fallback
      : NonNullable<C>
  : Fallback;

/**
 * Defines a module: its entry file's default export.
 *
 * ```ts
 * import { defineModule } from "@mesh/sdk";
 * import { greet } from "./greet.js";
 * export default defineModule({ tools: [greet] });
 * ```
 */
export function defineModule<S extends ConfigSchema | undefined = undefined>(
  spec: ModuleSpec<S>,
): TypedModule<S extends ConfigSchema ? z.output<S> : never> {
  const seen = new Set<string>();
  for (const tool of spec.tools) {
    if (seen.has(tool.name)) {
      throw new TypeError(
        `the module defines the tool ${JSON.stringify(tool.name)} twice; give each tool its own name`,
      );
    }
    seen.add(tool.name);
  }
  const start = spec.start;
  return {
    [MODULE_BRAND]: PROTOCOL_VERSION,
    tools: spec.tools,
    ...(start === undefined
      ? {}
      : {
          start: ({ host, signal }) => start(contextFor<ConfigOf<S>>(host, signal, spec.config)),
        }),
  };
}

/** Every issue with its path, as `path: message; …` (`(input)` for the root). */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      return `${path === "" ? "(input)" : path}: ${issue.message}`;
    })
    .join("; ");
}

function contextFor<C>(
  host: WorkerHost,
  signal: AbortSignal,
  schema: ConfigSchema | undefined,
): ToolContext<C> {
  const state = (name: string): StateHandle => ({
    get: (key) => host.ask("state.get", { state: name, key }, signal),
    put: async (key, value) => {
      await host.ask("state.put", { state: name, key, value }, signal);
    },
    delete: async (key) => {
      await host.ask("state.delete", { state: name, key }, signal);
    },
    keys: async (filter) =>
      (await host.ask(
        "state.keys",
        filter === undefined ? { state: name } : { state: name, filter },
        signal,
      )) as string[],
  });
  return {
    module: host.module,
    node: host.node,
    signal,
    log: {
      info: (text) => host.log("info", text),
      warn: (text) => host.log("warn", text),
      error: (text) => host.log("error", text),
    },
    provision: {
      get: (kind, key) => host.ask("provision.get", { kind, key }, signal),
      watch: (kind, key) => watchValues(host, kind, key, signal),
    },
    config: typedConfig<C>(schema, {
      get: (key) => host.ask("provision.get", { kind: "config", key }, signal),
      watch: (key) => watchValues(host, "config", key, signal),
    }),
    condition: async (name, level, message) => {
      await host.ask("condition", { name, level, message }, signal);
    },
    state,
  };
}

/**
 * The typed face of a module's config over an untyped source (the runtime's provision asks, or a
 * process's own): each value is checked against its key's schema when there is one.
 */
export function typedConfig<C>(
  schema: ConfigSchema | undefined,
  source: {
    get(key: string): Promise<unknown>;
    watch(key: string): AsyncIterableIterator<ProvisionItem>;
  },
): ConfigAccess<C> {
  const check = (key: string, value: unknown): unknown => {
    const field = schema?.shape[key] as z.ZodType | undefined;
    if (field === undefined) return value;
    const parsed = field.safeParse(value);
    if (parsed.success) return parsed.data;
    throw new ToolError(
      ToolErrorCode.REFUSED,
      `the config value of ${JSON.stringify(key)} does not match the module's config schema: ${describeIssues(parsed.error)}; set one that does with \`mesh config set\``,
    );
  };
  return {
    get: async (key) => check(key, await source.get(key)) as never,
    watch: (key) =>
      (async function* () {
        for await (const item of source.watch(key)) {
          if (!("value" in item)) {
            yield item;
            continue;
          }
          try {
            yield { value: check(key, item.value) } as never;
          } catch (error) {
            yield { refused: (error as Error).message };
          }
        }
      })(),
  };
}

/** A watch as an async iterator: items queue until read; leaving the loop stops it. */
async function* watchValues(
  host: WorkerHost,
  kind: string,
  key: string,
  signal: AbortSignal,
): AsyncGenerator<ProvisionItem> {
  const queue: ProvisionItem[] = [];
  let wake: (() => void) | undefined;
  const watch = await host.watch(kind, key, (item) => {
    queue.push(item);
    wake?.();
  });
  const onAbort = (): void => wake?.();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const item = queue.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (signal.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    watch.stop();
  }
}
