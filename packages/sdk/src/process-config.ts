/**
 * A module's own process reads its config as the module: it asks its node's host on
 * `mesh.provision.<node>.module.<module>`, a subject only the module's credential may publish to,
 * and hears on `mesh.provision.<node>.changed.<module>` when one of its values moved. The values
 * are the ones its tools see (the default, the mesh-wide value, this node's). It finds its secret
 * files from the environment the host gives it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { flush, isBusTrouble, request, type BusMessage, type MeshBus } from "@mesh/bus";
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
/**
 * How long an ask made again may take: the host answers from what it holds at once, so one not
 * answered in 2 s went where nothing answers, and the next is made sooner.
 */
const ASK_AGAIN_TIMEOUT_MS = 2_000;

/** Untyped `get` and `watch` of the module's config over the bus; `typedConfig` types them. */
export function processConfigSource(
  bus: MeshBus,
  who: { node: string; module: string; stopping: AbortSignal },
): {
  get(key: string): Promise<unknown>;
  watch(key: string): AsyncIterableIterator<ProvisionItem>;
} {
  const get = async (
    key: string,
    signal?: AbortSignal,
    timeoutMs = ASK_TIMEOUT_MS,
  ): Promise<unknown> => {
    const answer = await request(
      bus,
      provisionModuleSubject(who.node, who.module),
      { kind: "config", key },
      { timeoutMs, ...(signal === undefined ? {} : { signal }) },
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
      for await (const _ of askAgain(bus, changes, key, local.signal)) {
        let next: string;
        try {
          const ask = () => get(key, local.signal, ASK_AGAIN_TIMEOUT_MS);
          next = JSON.stringify(await untilAnswered(ask, local.signal));
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
 * When a watch asks again: at each change notice of its key, and each time the connection is back
 * — a notice said while it was away is lost (core NATS keeps nothing), and a host back from a
 * partition first says its notices then (decision 0182). Asks that pile up while one is made
 * are one. Ends when the notices end; throws what ended them, unless the watch was stopped.
 */
function askAgain(
  bus: MeshBus,
  changes: AsyncIterable<BusMessage>,
  key: string,
  signal: AbortSignal,
): AsyncIterable<void> {
  let pending = false;
  let ended: { error?: Error } | undefined;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    pending = true;
    wake?.();
  };
  bus.onConnection((now) => (now.status === "connected" ? poke() : undefined), { signal });
  void (async () => {
    try {
      for await (const message of changes) {
        const changed = ProvisionChanged.safeParse(message.json());
        if (!changed.success || changed.data.kind !== "config") continue;
        if (changed.data.key === undefined || changed.data.key === key) poke();
      }
      ended = {};
    } catch (error) {
      ended = { error: error instanceof Error ? error : new Error(String(error)) };
    }
    wake?.();
  })();
  return (async function* () {
    for (;;) {
      while (!pending && ended === undefined) await new Promise<void>((r) => (wake = r));
      if (pending) {
        pending = false;
        yield;
      } else if (ended?.error !== undefined && !signal.aborted) {
        throw ended.error;
      } else return;
    }
  })();
}

/** Between asks the host did not answer: 0.5 s doubling to 5 s. */
const ASK_AGAIN_FIRST_MS = 500;
const ASK_AGAIN_MAX_MS = 5_000;

/**
 * `ask`, made again while the host does not answer it (no responders, no answer in time: its
 * host restarting, or the ask routed to a connection of its host that a server still holds after
 * a partition), until it is answered or the watch stops: the notice that would ask again may
 * never come. A refusal is an answer, and is thrown.
 */
async function untilAnswered<T>(ask: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (let wait = ASK_AGAIN_FIRST_MS; ; wait = Math.min(wait * 2, ASK_AGAIN_MAX_MS)) {
    try {
      return await ask();
    } catch (error) {
      if (signal.aborted || !isBusTrouble(error)) throw error;
    }
    await sleep(wait, undefined, { signal }).catch(() => undefined);
  }
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
