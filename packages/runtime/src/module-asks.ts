/**
 * What module code asks the runtime over its worker's port (provision, conditions, states), and
 * the answers (and the service a module's tools are served as), always as the module the worker was started for: the name is bound by the
 * supervisor that owns the worker, and nothing in a message can change it.
 */
import type { Worker } from "node:worker_threads";
import { z } from "zod";
import { KvBucket, publish, sayCondition, serve, type MeshBus, type Served } from "@mesh/bus";
import {
  BoundKey,
  ConditionLevel,
  ErrorCode,
  MESH_OWNER,
  MeshError,
  isMeshError,
  meshBucketOf,
  ReplyCode,
  logsSubject,
  replyCodeOf,
  stateBucket,
  toolSubject,
  type LogLine,
} from "@mesh/protocol";
import type { AskOp, ProvisionItem, ToWorker, ToolInfo } from "@mesh/sdk/internal";
import type { Provisioner } from "./provisioner.js";

/** The process name a module's tools' `ctx.log` lines carry in `mesh logs <module>`. */
export const TOOLS_LOG_PROCESS = "tools";
/** The longest logged line filed on the bus; a longer one is cut (the runtime's log keeps it). */
const MAX_LOG_LINE = 16 * 1024;

/** Any JSON value: what a module keeps in its states. */
const Json = z.json();

export interface AsksOptions {
  readonly module: string;
  readonly node: string;
  readonly bus: MeshBus;
  readonly provisioner: Provisioner;
  readonly log: (text: string) => void;
  /** Whether `worker` is still the module's current one (answers to an ended one are dropped). */
  readonly current: (worker: Worker) => boolean;
}

/** Answers one module's asks, and keeps its current worker's watches. */
export class ModuleAsks {
  readonly #o: AsksOptions;
  /** The current worker's watches, by the id its bootstrap gave them. */
  readonly #watches = new Map<number, () => void>();

  constructor(options: AsksOptions) {
    this.#o = options;
  }

  /**
   * A line the module's tools logged (`ctx.log`): in the runtime's own log, and filed under the
   * module itself (`mesh logs <module>`), marked as its tools' (process `tools`); warn and error
   * go as stderr.
   */
  log(level: string, text: string): void {
    this.#o.log(`[${this.#o.module}] ${level}: ${text}`);
    const line = level === "info" ? text : `${level}: ${text}`;
    try {
      publish(this.#o.bus, logsSubject(this.#o.node, this.#o.module), {
        process: TOOLS_LOG_PROCESS,
        stream: level === "info" ? "stdout" : "stderr",
        line: line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line,
        at: new Date().toISOString(),
      } satisfies LogLine);
    } catch {
      // The connection is closed (the runtime is stopping); the runtime's own log has the line.
    }
  }

  /** Stops every watch (the worker ended). */
  stopWatches(): void {
    for (const stop of this.#watches.values()) stop();
    this.#watches.clear();
    this.#o.provisioner.stopModule(this.#o.module);
  }

  async answer(worker: Worker, id: number, op: AskOp, params: unknown): Promise<void> {
    try {
      const value = await this.#do(worker, id, op, (params ?? {}) as Record<string, unknown>);
      // As it is: a worker's message keeps undefined (a state key never written) apart from null.
      if (this.#o.current(worker)) post(worker, { v: 1, t: "answer", id, value });
    } catch (error) {
      if (!this.#o.current(worker)) return;
      const code = replyCodeOf(error);
      if (code === ReplyCode.INTERNAL) {
        this.#o.log(`[node-tools] ${this.#o.module}: ${op} failed: ${String(error)}`);
      }
      post(worker, {
        v: 1,
        t: "refusal",
        id,
        code,
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }

  async #do(worker: Worker, id: number, op: AskOp, p: Record<string, unknown>): Promise<unknown> {
    const module = this.#o.module;
    switch (op) {
      case "provision.get":
        return this.#o.provisioner.get(module, { kind: p["kind"], key: p["key"] });
      case "provision.watch": {
        const stop = await this.#o.provisioner.watch(
          module,
          { kind: p["kind"], key: p["key"] },
          (item: ProvisionItem) => {
            if (this.#o.current(worker)) post(worker, { v: 1, t: "watched", watch: id, item });
          },
        );
        if (!this.#o.current(worker)) stop();
        else this.#watches.set(id, stop);
        return {};
      }
      case "provision.unwatch": {
        const watch = Number(p["watch"]);
        this.#watches.get(watch)?.();
        this.#watches.delete(watch);
        return {};
      }
      case "condition":
        await this.#condition(p);
        return {};
      case "state.get":
      case "state.put":
      case "state.delete":
      case "state.keys":
        return this.#state(op, p);
      default:
        throw new MeshError(
          ErrorCode.INVALID_INPUT,
          `the runtime answers no ${JSON.stringify(op)}; the module's SDK is newer than the runtime`,
        );
    }
  }

  async #condition(p: Record<string, unknown>): Promise<void> {
    const level = ConditionLevel.safeParse(p["level"]);
    if (!level.success) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `a condition's level is ${JSON.stringify(p["level"])}; say info, warning or error`,
      );
    }
    await sayCondition(this.#o.bus, {
      module: this.#o.module,
      node: this.#o.node,
      name: String(p["name"]),
      level: level.data,
      message: String(p["message"]),
    });
  }

  async #state(op: AskOp, p: Record<string, unknown>): Promise<unknown> {
    const module = this.#o.module;
    const { bucket, readOnly, own } = await this.#stateBucket(String(p["state"]));
    // Its own states through the stream's leader, as a process reads them (@mesh/sdk's process);
    // a mesh bucket a part writes is no state it owns whole, so it is read by direct gets.
    const kv = await KvBucket.openWith(this.#o.bus, bucket, Json, { fromLeader: own });
    const key = String(p["key"]);
    if (op === "state.get") return (await kv.get(key))?.value;
    if (op === "state.keys") {
      return kv.keys(typeof p["filter"] === "string" ? p["filter"] : ">");
    }
    if (readOnly) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${module} reads the state ${JSON.stringify(p["state"])} and does not own it, so it may not write it; write only its own states`,
        { module },
      );
    }
    if (op === "state.put") await kv.put(key, Json.parse(p["value"] ?? null));
    else await kv.delete(key);
    return {};
  }

  /**
   * A state by the name module code gave: its own (`name`), or one it reads (`owner/name`). A
   * read is resolved through the provisioner as this module, so only a declared read (the bound
   * value `read.<owner>.<state>`) is opened: the runtime's credential holds every served module's
   * reads, and the bus alone would not stop one module reading what another declared.
   */
  async #stateBucket(name: string): Promise<{ bucket: string; readOnly: boolean; own: boolean }> {
    const module = this.#o.module;
    const slash = name.indexOf("/");
    const owner = slash < 0 ? module : name.slice(0, slash);
    const state = slash < 0 ? name : name.slice(slash + 1);
    if (owner === MESH_OWNER) return this.#meshBucket(name, state);
    let bucket: string;
    try {
      bucket = stateBucket(owner, state);
    } catch (error) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `${JSON.stringify(name)} names no state: give a state of ${module}'s own, or <module>/<state> for one it reads`,
        { cause: error },
      );
    }
    if (owner === module) return { bucket, readOnly: false, own: true };
    const bound = await this.#o.provisioner.get(module, {
      kind: "bound",
      key: BoundKey.read(owner, state),
    });
    if (bound !== bucket) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${module} may not read ${owner}/${state}: the provisioner answered ${JSON.stringify(bound)} for it, not the bucket ${bucket}; declare the read in ${module}'s manifest`,
        { module },
      );
    }
    return { bucket, readOnly: true, own: false };
  }

  /**
   * One of the mesh's own buckets, `mesh/<name>`, which only a mesh part's manifest names
   * (decision 0190: the assigner's put tools write mesh/puts): written where the provisioner
   * answers its `write.mesh.<name>` as the bucket, read where it answers `read.mesh.<name>`, and
   * refused otherwise — the runtime's credential holds what every served part names, and the bus
   * alone would not stop another module's code using it.
   */
  async #meshBucket(
    name: string,
    state: string,
  ): Promise<{ bucket: string; readOnly: boolean; own: boolean }> {
    const module = this.#o.module;
    const bucket = meshBucketOf(name);
    if (bucket === undefined) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `${JSON.stringify(name)} names none of the mesh's buckets; give mesh/<bucket> as the part's manifest names it (e.g. mesh/puts)`,
        { module },
      );
    }
    const answered = async (key: string): Promise<unknown> => {
      try {
        return await this.#o.provisioner.get(module, { kind: "bound", key });
      } catch (error) {
        // Not answered: the manifest does not name it so.
        if (isMeshError(error, ErrorCode.NOT_FOUND)) return undefined;
        throw error;
      }
    };
    if ((await answered(BoundKey.write(MESH_OWNER, state))) === bucket) {
      return { bucket, readOnly: false, own: false };
    }
    if ((await answered(BoundKey.read(MESH_OWNER, state))) === bucket) {
      return { bucket, readOnly: true, own: false };
    }
    throw new MeshError(
      ErrorCode.REFUSED,
      `${module} may not use ${name}: its manifest names it in neither reads nor writes, and only the mesh's parts may name the mesh's buckets; name it in the part's manifest`,
      { module },
    );
  }
}

export function post(worker: Worker, message: ToWorker): void {
  worker.postMessage(message);
}

/** Registers a module's tools as one NATS service; each endpoint runs `call`. */
export function serveModule(
  o: {
    readonly module: string;
    readonly node: string;
    readonly bus: MeshBus;
    readonly version: string;
    readonly onRejected: (why: string, subject: string) => void;
    readonly log: (text: string) => void;
    /** Told how each call ended: answered, or the code it was refused with (decision 0172). */
    readonly counted?: (tool: string, code: ReplyCode | undefined) => void;
  },
  tools: readonly ToolInfo[],
  call: (tool: string, input: unknown, headers: ReadonlyMap<string, string>) => Promise<unknown>,
): Promise<Served> {
  const endpoints = tools.map((tool) => ({
    name: tool.name,
    subject: toolSubject(o.node, o.module, tool.name),
    metadata: {
      description: tool.description,
      input: JSON.stringify(tool.input),
      ...(tool.output === undefined ? {} : { output: JSON.stringify(tool.output) }),
    },
    handler: async (request: { json(): unknown; headers: ReadonlyMap<string, string> }) => {
      // Counted here, around everything the endpoint does, so a refusal before the worker (not
      // JSON, too deep) counts with the code its reply carries.
      try {
        const result = await call(tool.name, shallowEnough(request.json()), request.headers);
        o.counted?.(tool.name, undefined);
        return result;
      } catch (error) {
        o.counted?.(tool.name, replyCodeOf(error));
        throw error;
      }
    },
  }));
  return serve(o.bus, {
    name: o.module,
    version: o.version,
    description: `the tools of ${o.module} on ${o.node}`,
    metadata: { node: o.node, module: o.module },
    endpoints,
    onRejected: o.onRejected,
    onInternalError: (error, subject) =>
      o.log(`[node-tools] ${subject}: ${error instanceof Error ? error.message : String(error)}`),
  });
}

/** How deep a tool's input may nest: deeper input is refused before it reaches the worker. */
export const MAX_INPUT_DEPTH = 100;

/**
 * The input, when it nests at most {@link MAX_INPUT_DEPTH} levels; INVALID_INPUT otherwise. Copying
 * a 20,000-deep array to the worker overflowed the stack and answered INTERNAL; no schema needs it.
 * Walked with a stack of its own, so the check itself cannot overflow.
 */
export function shallowEnough(input: unknown): unknown {
  const pending: Array<{ value: unknown; depth: number }> = [{ value: input, depth: 0 }];
  while (pending.length > 0) {
    const { value, depth } = pending.pop() as { value: unknown; depth: number };
    if (typeof value !== "object" || value === null) continue;
    if (depth >= MAX_INPUT_DEPTH) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `the input nests deeper than ${MAX_INPUT_DEPTH} levels; send a flatter document`,
      );
    }
    for (const child of Object.values(value)) pending.push({ value: child, depth: depth + 1 });
  }
  return input;
}
