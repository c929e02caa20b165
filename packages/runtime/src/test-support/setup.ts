/**
 * A real bus for the runtime's tests: a server whose runtime user holds exactly `runtimeGrant`
 * for the modules under test, the layout created, and waiting on the runtime's status.
 */
import { MeshBus, ensureLayout } from "@mesh/bus";
import { credentialFor, startTestServer, type TestServer, type TestUser } from "@mesh/bus/testing";
import { runtimeGrant, type Owners, type ServedManifest } from "@mesh/core";
import { RUNTIME_MODULE, type Credential } from "@mesh/protocol";
import type { RuntimeStatus } from "../runtime.js";
import type { ModuleState } from "../worker-tuning.js";

export const NODE = "n1";
export const RUNTIME_PASSWORD = "runtime-password-for-tests";

/** A manifest with one tools bundle, as the runtime's grant reads it. */
export function served(
  module: string,
  extra: Partial<Pick<ServedManifest, "states" | "reads" | "calls">> = {},
): ServedManifest {
  return {
    module,
    states: extra.states ?? [],
    reads: extra.reads ?? [],
    calls: extra.calls ?? [],
    bundles: [
      { name: "tools", language: "typescript", entrypoints: ["tools.ts"], loads: ["tools.ts"] },
    ],
  };
}

export interface TestBus {
  readonly server: TestServer;
  readonly admin: MeshBus;
  /** The runtime's credential (`node-tools` of NODE, with runtimeGrant). */
  readonly runtimeCredential: Credential;
  /** The test users the bus was started with (the runtime's first), for `server.setUsers`. */
  readonly users: readonly TestUser[];
  stop(): Promise<void>;
}

export async function startTestBus(options: {
  readonly modules: readonly ServedManifest[];
  /** Other modules' states, for reads (runtimeGrant's `owners`). */
  readonly owners?: Owners;
  /** Other users beside the runtime's (a module's own process, say). */
  readonly users?: readonly TestUser[];
}): Promise<TestBus> {
  const grant = runtimeGrant({
    node: NODE,
    modules: options.modules,
    owners: options.owners ?? {},
  });
  const users: TestUser[] = [
    { user: "runtime", password: RUNTIME_PASSWORD, permissions: grant.permissions },
    ...(options.users ?? []),
  ];
  const server = await startTestServer({ users });
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: NODE, module: "controller" }),
  );
  await ensureLayout(admin);
  return {
    server,
    admin,
    users,
    runtimeCredential: credentialFor(
      server,
      { user: "runtime", password: RUNTIME_PASSWORD },
      { node: NODE, module: RUNTIME_MODULE },
    ),
    async stop() {
      await admin.close();
      await server.stop();
    },
  };
}

/** Statuses as they come, with a way to wait for one that matches. */
export class StatusLog {
  latest: RuntimeStatus | undefined;
  readonly #waiters: Array<{ match(s: RuntimeStatus): boolean; resolve(s: RuntimeStatus): void }> =
    [];

  readonly push = (status: RuntimeStatus): void => {
    this.latest = status;
    for (const waiter of [...this.#waiters]) {
      if (waiter.match(status)) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(status);
      }
    }
  };

  /** Resolves with the first status (the current one included) that matches. */
  until(match: (s: RuntimeStatus) => boolean): Promise<RuntimeStatus> {
    if (this.latest !== undefined && match(this.latest)) return Promise.resolve(this.latest);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }

  /** Resolves with the first status (the current one included) in which `module` is in `state`. */
  inState(module: string, state: ModuleState): Promise<RuntimeStatus> {
    return this.until((s) => s.modules[module]?.state === state);
  }
}
