/**
 * `@mesh/sdk/process`: what a module's own **process** (a daemon the host runs, not tool code in
 * the runtime) imports to reach the bus as its module: its states, its conditions, and saying
 * which states it keeps. It connects with the credential the host wrote for it
 * (`MESH_BROKER_FILE`, the module's `broker` own-secret), so it can do exactly what the module's
 * manifest declares and nothing else.
 *
 * This entry brings the NATS client with it (esbuild bundles it into the process's bundle); tool
 * code never imports it — it reaches the same things through its context.
 *
 * It also reads the module's config as the module (the same values its tools see, asked of the
 * node's host on the module's own subject) and finds its secret files (`secretPath`).
 *
 * ```ts
 * import { connectProcess, secretPath } from "@mesh/sdk/process";
 * const mesh = await connectProcess();
 * mesh.keeps([{ name: "counts", readable: true }]);
 * await mesh.state("counts").put("total", 1);
 * const step = await mesh.config.get("step");
 * const token = secretPath("api-token");
 * ```
 */
import { z } from "zod";
import {
  KvBucket,
  MeshBus,
  keepSayingKeeps,
  request,
  sayCondition,
  type KeptState,
} from "@mesh/bus";
import {
  Env,
  ErrorCode,
  MeshError,
  stateBucket,
  toolSubject,
  type ConditionLevel,
} from "@mesh/protocol";
import {
  typedConfig,
  type ConfigAccess,
  type ConfigOf,
  type ConfigSchema,
  type StateHandle,
} from "./define.js";
import { processConfigSource } from "./process-config.js";

export { secretPath } from "./process-config.js";

export interface ProcessMesh<C = Record<string, unknown>> extends AsyncDisposable {
  readonly module: string;
  readonly node: string;
  /**
   * The module's config, asked of the node's host as the module: the default, the mesh-wide
   * value or this node's, as tools see it. Typed by the schema given to connectProcess.
   */
  readonly config: ConfigAccess<C>;
  /**
   * Calls a tool the manifest declares in `calls` (`"hello/greet"`), on this node unless
   * another is named; a coded error (MeshError) when the tool refuses.
   */
  call(
    tool: string,
    input?: unknown,
    options?: { node?: string; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<unknown>;
  /** One of the module's own states (`"counts"`), or one it reads (`"counter/counts"`, read-only by grant). */
  state(name: string): StateHandle;
  /** Says a condition an operator sees; the last per name is kept. */
  condition(name: string, level: ConditionLevel, message: string): Promise<void>;
  /** Says which states the process keeps and which others may read, now and after every reconnect. */
  keeps(states: readonly KeptState[]): void;
  close(): Promise<void>;
}

export interface ConnectProcessOptions<S extends ConfigSchema | undefined = undefined> {
  /** The credential file; `MESH_BROKER_FILE` by default. */
  readonly credentialFile?: string;
  readonly signal?: AbortSignal;
  /** The module's config as a zod object (the one its tools use): types and checks `config`. */
  readonly config?: S;
}

/** Connects as the module the credential names, waiting for the bus if it is not up yet. */
export async function connectProcess<S extends ConfigSchema | undefined = undefined>(
  options: ConnectProcessOptions<S> = {},
): Promise<ProcessMesh<ConfigOf<S>>> {
  const file = options.credentialFile ?? process.env[Env.brokerFile];
  if (file === undefined || file === "") {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `${Env.brokerFile} is not set, so this process has no credential; declare "own-secrets": {"broker": {"path": "broker.json"}} in the module's manifest, and the host sets it`,
    );
  }
  const bus = await MeshBus.connectWithFile(file, {
    waitForBus: true,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return processMeshOver(bus, options.config);
}

/**
 * The process's mesh over a connection made already (the Python bridge keeps the connection to
 * serve its module's tools on it too); closing it closes the connection.
 */
export function processMeshOver<S extends ConfigSchema | undefined = undefined>(
  bus: MeshBus,
  config?: S,
): ProcessMesh<ConfigOf<S>> {
  const { module, node } = bus.credential;
  const stopping = new AbortController();
  const buckets = new Map<string, Promise<KvBucket<z.core.util.JSONType>>>();
  const bucketOf = (name: string) => {
    const [owner, state] = name.includes("/")
      ? (name.split("/") as [string, string])
      : [module, name];
    const bucket = stateBucket(owner, state);
    let opened = buckets.get(bucket);
    if (opened === undefined) {
      // Its own states through the stream's leader: what it reads is what was acknowledged (a
      // copy still catching up after a server died would answer older values).
      opened = KvBucket.openWith(bus, bucket, z.json(), { fromLeader: owner === module });
      buckets.set(bucket, opened);
    }
    return opened;
  };
  const close = async () => {
    stopping.abort();
    await bus.close();
  };
  return {
    module,
    node,
    config: typedConfig<ConfigOf<S>>(
      config,
      processConfigSource(bus, { node, module, stopping: stopping.signal }),
    ),
    call: (tool, input = {}, callOptions = {}) => {
      const [owner = "", name = ""] = tool.split("/");
      return request(bus, toolSubject(callOptions.node ?? node, owner, name), input, {
        ...(callOptions.timeoutMs === undefined ? {} : { timeoutMs: callOptions.timeoutMs }),
        ...(callOptions.signal === undefined ? {} : { signal: callOptions.signal }),
      });
    },
    state: (name) => ({
      get: async (key) => (await (await bucketOf(name)).get(key))?.value,
      put: async (key, value) => {
        await (await bucketOf(name)).put(key, value as z.core.util.JSONType);
      },
      delete: async (key) => (await bucketOf(name)).delete(key),
      keys: async (filter) => (await bucketOf(name)).keys(filter),
    }),
    condition: async (name, level, message) => {
      await sayCondition(bus, { name, level, message, node });
    },
    keeps: (states) => keepSayingKeeps(bus, states, { signal: stopping.signal }),
    close,
    [Symbol.asyncDispose]: close,
  };
}
