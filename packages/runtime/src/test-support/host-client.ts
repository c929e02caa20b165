/**
 * The host's provisioner client for the runtime's tests: a real `Host` (packages/host) on the
 * test bus with `hostGrant`, answering from the node's composition and mesh-config, plus a
 * wiretap on `mesh.provision.<node>` that records every ask as sent, so a test can prove what
 * the runtime asked and as whom (and that it never asked at all).
 */
import { once } from "@mesh/kit";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KvBucket, flush, publish, request, type MeshBus } from "@mesh/bus";
import { credentialFor, waitFor } from "@mesh/bus/testing";
import { fingerprintOf } from "@mesh/core";
import { Host } from "@mesh/host";
import {
  Bucket,
  ErrorCode,
  Principal,
  isMeshError,
  ProvisionAsk,
  provisionChangedSubject,
  provisionSubject,
  type ComposedModule,
} from "@mesh/protocol";
import type { TestBus } from "./setup.js";

export const HOST_USER = { user: "host", password: "host-password-for-tests" };

export interface HostClient extends AsyncDisposable {
  /** Every ask the runtime sent, in order. */
  readonly asks: ProvisionAsk[];
  /** Writes the node's composition with these modules; the host says what moved. */
  compose(modules: Record<string, ComposedModule>): Promise<void>;
  /** Writes a mesh-config value (`<module>.<key>` or `<module>.<key>.<node>`). */
  setConfig(key: string, value: unknown): Promise<void>;
  /** Says a value moved when it did not (the runtime must not hand it twice). */
  sayChanged(module: string, kind: "config" | "bound", key?: string): void;
  stop(): Promise<void>;
}

/**
 * Starts the host of `node` with the composition `modules`. The test bus must have the user
 * {@link HOST_USER} with `hostGrant({node})`.
 */
export async function startHostClient(options: {
  readonly bus: TestBus;
  readonly node: string;
  readonly modules: Record<string, ComposedModule>;
}): Promise<HostClient> {
  const { bus, node } = options;
  const admin = bus.admin;
  const asks: ProvisionAsk[] = [];
  const stopTap = new AbortController();
  const tap = admin.subscribe(provisionSubject(node), { signal: stopTap.signal });
  void (async () => {
    for await (const message of tap) {
      const ask = ProvisionAsk.safeParse(message.json());
      if (ask.success) asks.push(ask.data);
    }
  })().catch(() => undefined);
  await flush(admin);

  const compose = async (modules: Record<string, ComposedModule>): Promise<void> => {
    const composed = await KvBucket.open(admin, Bucket.composed);
    await composed.put(node, { node, resources: [], modules, fingerprint: fingerprintOf([]) });
  };
  await compose(options.modules);
  const root = await mkdtemp(join(tmpdir(), "mesh-runtime-host-"));
  const host = await Host.create({
    node,
    root,
    credential: credentialFor(bus.server, HOST_USER, { node, module: Principal.host }),
    pollMs: 100,
    log: () => undefined,
  });
  const running = host.run({ signal: new AbortController().signal });
  const stop = once(async () => {
    stopTap.abort();
    await host.stop();
    await running;
    await rm(root, { recursive: true, force: true });
  });
  try {
    await composedHeard(admin, node, Object.keys(options.modules));
  } catch (error) {
    await stop();
    throw error;
  }
  // The probes are no ask of the runtime's.
  asks.length = 0;
  return {
    asks,
    compose,
    async setConfig(key, value) {
      const config = await KvBucket.open(admin, Bucket.config);
      await config.put(key, { value: value as never, by: "ada", at: new Date().toISOString() });
    },
    sayChanged(module, kind, key) {
      publish(admin, provisionChangedSubject(node), {
        module,
        kind,
        ...(key === undefined ? {} : { key }),
      });
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Resolves once the host has heard its composition: an ask of each module's bound value that no
 * module has is NOT_FOUND (the module is composed), no longer REFUSED (not composed here yet). A
 * runtime started before then would be refused its values as a module of another node.
 */
async function composedHeard(admin: MeshBus, node: string, modules: string[]): Promise<void> {
  for (const module of modules) {
    await waitFor(
      async () => {
        try {
          await request(admin, provisionSubject(node), { module, kind: "bound", key: "probe" });
          return true;
        } catch (error) {
          return isMeshError(error, ErrorCode.NOT_FOUND);
        }
      },
      { what: `the host to hear ${module} composed on ${node}`, timeout: 60_000 },
    );
  }
}
