/**
 * The bootstrap the runtime starts each module's worker with (`@mesh/sdk/worker`): imports the
 * module's entries, reports its tools, runs calls, and carries what module code asks to the
 * runtime over `parentPort`. Module code never touches the port itself through the SDK; were it
 * to post on it, the runtime would still answer only as the module this worker was started for.
 */
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";
import { ToolError, isToolError } from "./tool-error.js";
import { guardSignals, memoryProbe, watchMemory } from "./worker-guard.js";
import {
  MODULE_BRAND,
  PROTOCOL_VERSION,
  PROVIDED_MODULES,
  ToolErrorCode,
  type AskOp,
  type AskParams,
  type BrandedModule,
  type BrandedTool,
  type FromWorker,
  type ProvisionItem,
  type ToWorker,
  type WorkerHost,
  type WorkerSpare,
  type WorkerStart,
} from "./worker-protocol.js";

const port = parentPort;
if (port === null) {
  throw new Error("@mesh/sdk/worker runs only as a worker the mesh runtime starts");
}
const data = workerData as WorkerStart | WorkerSpare;
const post = (message: FromWorker): void => port.postMessage(message);

// Before any module code loads: it may not signal the runtime's process, and what it holds
// outside the heap is measured (README.md, "Containment").
guardSignals((pid, signal) => {
  post({ v: 1, t: "self-signal", pid, signal: String(signal) });
  process.exit(1);
});
const measure =
  data.external === undefined
    ? memoryProbe()
    : watchMemory(data.external.limitBytes, data.external.probeMs, (memory) =>
        post({ v: 1, t: "over-memory", memory }),
      );
// What the runtime provides to module code, loaded once per worker before any of it.
Object.defineProperty(globalThis, PROVIDED_MODULES, {
  value: Object.freeze({ "@mesh/sdk": await import("./index.js"), zod: await import("zod") }),
  writable: false,
  configurable: false,
  enumerable: false,
});
// A spare waits here, booted, until the runtime hands it its module.
const start: WorkerStart =
  "spare" in data
    ? await new Promise<WorkerStart>((resolve) => {
        const onStart = (message: ToWorker): void => {
          if (message.v !== PROTOCOL_VERSION || message.t !== "start") return;
          port.off("message", onStart);
          resolve(message.start);
        };
        port.on("message", onStart);
        post({ v: 1, t: "spare-ready" });
      })
    : data;

let nextAsk = 1;
const asks = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
const watches = new Map<number, (item: ProvisionItem) => void>();
const calls = new Map<number, AbortController>();
const tools = new Map<string, BrandedTool>();
const unload = new AbortController();

const host: WorkerHost = {
  module: start.module,
  node: start.node,
  ask<Op extends AskOp>(op: Op, params: AskParams[Op], signal?: AbortSignal) {
    return new Promise<unknown>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(abortError(signal));
        return;
      }
      const id = nextAsk++;
      const onAbort = (): void => {
        asks.delete(id);
        reject(abortError(signal));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      asks.set(id, {
        resolve: (v) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      });
      post({ v: 1, t: "ask", id, op, params });
    });
  },
  async watch(kind, key, onItem) {
    // The runtime answers a watch ask with its id, then sends items under that id; the handler
    // is registered before the ask so the first item cannot come before it.
    const pending: ProvisionItem[] = [];
    let deliver: (item: ProvisionItem) => void = (item) => pending.push(item);
    const id = nextAsk;
    watches.set(id, (item) => deliver(item));
    try {
      await host.ask("provision.watch", { kind, key });
    } catch (error) {
      watches.delete(id);
      throw error;
    }
    deliver = onItem;
    for (const item of pending) onItem(item);
    let stopped = false;
    return {
      stop() {
        if (stopped) return;
        stopped = true;
        watches.delete(id);
        host.ask("provision.unwatch", { watch: id }).catch(() => undefined);
      },
    };
  },
  log(level, text) {
    post({ v: 1, t: "log", level, text });
  },
};

function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error("aborted");
}

port.on("message", (message: ToWorker) => {
  if (message.v !== PROTOCOL_VERSION) return;
  switch (message.t) {
    case "ping":
      post({ v: 1, t: "pong", seq: message.seq, memory: measure() });
      return;
    case "answer":
      asks.get(message.id)?.resolve(message.value);
      asks.delete(message.id);
      return;
    case "refusal":
      asks.get(message.id)?.reject(new ToolError(message.code, message.message));
      asks.delete(message.id);
      return;
    case "watched":
      watches.get(message.watch)?.(message.item);
      return;
    case "call":
      void runCall(message.id, message.tool, message.input, message.timeoutMs);
      return;
    case "cancel":
      calls.get(message.id)?.abort(timeoutError());
      return;
    case "stop":
      unload.abort(new Error("the module is being unloaded"));
      for (const controller of calls.values()) controller.abort(unload.signal.reason);
      return;
    case "start":
      return; // read above, once, by a spare waiting for its module
  }
});

function timeoutError(): Error {
  const error = new Error("the call's deadline passed");
  error.name = "TimeoutError";
  return error;
}

async function runCall(id: number, name: string, input: unknown, timeoutMs: number): Promise<void> {
  const tool = tools.get(name);
  if (tool === undefined) {
    post({
      v: 1,
      t: "failed",
      id,
      code: ToolErrorCode.NOT_FOUND,
      message: `${start.module} has no tool ${JSON.stringify(name)}`,
    });
    return;
  }
  const controller = new AbortController();
  calls.set(id, controller);
  // The runtime keeps the deadline too (a blocked worker cannot keep its own); this one aborts
  // the handler's signal even when the runtime's cancel is late.
  const timer = setTimeout(() => controller.abort(timeoutError()), timeoutMs);
  const signal = AbortSignal.any([controller.signal, unload.signal]);
  try {
    const value = await tool.invoke(input, { host, signal });
    post({ v: 1, t: "result", id, value: value ?? null });
  } catch (error) {
    if (isToolError(error)) {
      post({ v: 1, t: "failed", id, code: error.code, message: error.message });
    } else if (signal.aborted && controller.signal.aborted) {
      post({
        v: 1,
        t: "failed",
        id,
        code: ToolErrorCode.TIMEOUT,
        message: `${start.module}/${name} did not finish within ${timeoutMs} ms`,
      });
    } else {
      post({
        v: 1,
        t: "failed",
        id,
        code: ToolErrorCode.INTERNAL,
        message: "the handler failed",
        detail: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
  } finally {
    clearTimeout(timer);
    calls.delete(id);
  }
}

function isBranded(value: unknown): value is BrandedModule {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Record<symbol, unknown>)[MODULE_BRAND] === "number" &&
    Array.isArray((value as { tools?: unknown }).tools)
  );
}

try {
  const definitions: BrandedModule[] = [];
  for (const entry of start.entries) {
    const loaded = (await import(pathToFileURL(entry).href)) as { default?: unknown };
    if (!isBranded(loaded.default)) {
      throw new Error(
        `${entry} does not default-export a module definition; end the entry with \`export default defineModule({ tools: [...] })\` from @mesh/sdk`,
      );
    }
    const version = loaded.default[MODULE_BRAND];
    if (version !== PROTOCOL_VERSION) {
      throw new Error(
        `${entry} was built with an SDK speaking protocol ${version}, and this runtime speaks ${PROTOCOL_VERSION}; rebuild the module against the runtime's @mesh/sdk`,
      );
    }
    definitions.push(loaded.default);
  }
  for (const definition of definitions) {
    for (const tool of definition.tools) {
      if (tools.has(tool.info.name)) {
        throw new Error(
          `two entries of ${start.module} define the tool ${JSON.stringify(tool.info.name)}; give each tool one definition`,
        );
      }
      tools.set(tool.info.name, tool);
    }
  }
  for (const definition of definitions) {
    await definition.start?.({ host, signal: unload.signal });
  }
  post({ v: 1, t: "loaded", tools: [...tools.values()].map((tool) => tool.info) });
} catch (error) {
  post({
    v: 1,
    t: "load-failed",
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
}
