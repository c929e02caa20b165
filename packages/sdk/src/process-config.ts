/**
 * A module's own process reads its config as the module: it asks its node's host on
 * `mesh.provision.<node>.module.<module>`, a subject only the module's credential may publish to,
 * and hears on `mesh.provision.<node>.changed.<module>` when one of its values moved. The values
 * are the ones its tools see (the default, the mesh-wide value, this node's). It finds its secret
 * files from the environment the host gives it.
 */
import { flush, request, type MeshBus } from "@mesh/bus";
import {
  Env,
  ErrorCode,
  MeshError,
  ProvisionAnswer,
  ProvisionChanged,
  provisionModuleChangedSubject,
  provisionModuleSubject,
} from "@mesh/protocol";
import type { ProvisionItem } from "./worker-protocol.js";

/** How long one ask of the host may take. */
const ASK_TIMEOUT_MS = 5_000;

/** Untyped `get` and `watch` of the module's config over the bus; `typedConfig` types them. */
export function processConfigSource(
  bus: MeshBus,
  who: { node: string; module: string; stopping: AbortSignal },
): {
  get(key: string): Promise<unknown>;
  watch(key: string): AsyncIterableIterator<ProvisionItem>;
} {
  const get = async (key: string, signal?: AbortSignal): Promise<unknown> => {
    const answer = await request(
      bus,
      provisionModuleSubject(who.node, who.module),
      { kind: "config", key },
      { timeoutMs: ASK_TIMEOUT_MS, ...(signal === undefined ? {} : { signal }) },
    );
    return ProvisionAnswer.parse(answer).value;
  };
  async function* watch(key: string): AsyncGenerator<ProvisionItem> {
    const local = new AbortController();
    const stop = (): void => local.abort();
    who.stopping.addEventListener("abort", stop, { once: true });
    // Subscribed (and the server told) before the first ask, so no change falls in between.
    const changes = bus.subscribe(provisionModuleChangedSubject(who.node, who.module), {
      signal: local.signal,
    });
    try {
      await flush(bus);
      let last: string = JSON.stringify(await get(key, local.signal));
      yield { value: JSON.parse(last) as unknown };
      for await (const message of changes) {
        const changed = ProvisionChanged.safeParse(message.json());
        if (!changed.success || changed.data.kind !== "config") continue;
        if (changed.data.key !== undefined && changed.data.key !== key) continue;
        let next: string;
        try {
          next = JSON.stringify(await get(key, local.signal));
        } catch (error) {
          if (local.signal.aborted) return;
          const refused = (error as Error).message;
          if (last !== `\0${refused}`) yield { refused };
          last = `\0${refused}`;
          continue;
        }
        if (next !== last) yield { value: JSON.parse(next) as unknown };
        last = next;
      }
    } finally {
      who.stopping.removeEventListener("abort", stop);
      local.abort();
    }
  }
  return { get: (key) => get(key), watch };
}

/**
 * The absolute path of the file the host wrote for one of the module's declared secrets
 * (`own-secrets`), read from the environment the host gives each process (`MESH_SECRET_FILES`).
 * NOT_FOUND, naming the declared ones, for a name the manifest does not declare.
 *
 * ```ts
 * import { readFile } from "node:fs/promises";
 * import { secretPath } from "@mesh/sdk/process";
 * const token = (await readFile(secretPath("api-token"), "utf8")).trim();
 * ```
 */
export function secretPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const text = env[Env.secretFiles];
  if (text === undefined || text === "") {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${Env.secretFiles} is not set, so this process was not started by a mesh host (or by an older one); run it as a process of its module, or read ${Env.secretsDir}`,
    );
  }
  let files: Record<string, unknown>;
  try {
    files = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new MeshError(ErrorCode.INVALID_VALUE, `${Env.secretFiles} is not JSON`, {
      cause: error,
    });
  }
  const path = Object.hasOwn(files, name) ? files[name] : undefined;
  if (typeof path !== "string") {
    const declared = Object.keys(files).sort();
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `the module declares no secret ${JSON.stringify(name)} (${declared.length === 0 ? "it declares none" : `it declares ${declared.join(", ")}`}); declare it under own-secrets in its manifest`,
    );
  }
  return path;
}
