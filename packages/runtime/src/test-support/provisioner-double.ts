/**
 * TEST DOUBLE of the host's provisioner client (DESIGN.md "The host"), used by the runtime's
 * tests only until packages/host has the real one: swap `startProvisionerDouble` for the host's
 * client in these tests once it exists.
 *
 * It serves `mesh.provision.<node>` with `serve()` as the real client does: answers `{value}`
 * for a value it holds for the asking module, refuses (NOT_FOUND, with the reason) what it does
 * not hold, and says `mesh.provision.<node>.changed` when a value moves. It records every ask,
 * so a test can prove what the runtime asked and as whom.
 */
import { publish, serve, type MeshBus, type Served } from "@mesh/bus";
import {
  ErrorCode,
  MeshError,
  PROVISION_SERVICE,
  ProvisionAsk,
  provisionChangedSubject,
  provisionSubject,
} from "@mesh/protocol";

export interface ProvisionerDouble extends AsyncDisposable {
  /** Every ask, in order, as received. */
  readonly asks: ProvisionAsk[];
  /** Sets a module's value and says it changed. */
  set(module: string, kind: "config" | "bound", key: string, value: unknown): void;
  /** Stops answering a value (a refusal from now on) and says it changed. */
  remove(module: string, kind: "config" | "bound", key: string): void;
  /** Resolves at the next ask that matches. */
  nextAsk(match: (ask: ProvisionAsk) => boolean): Promise<ProvisionAsk>;
  stop(): Promise<void>;
}

export async function startProvisionerDouble(options: {
  readonly bus: MeshBus;
  readonly node: string;
  /** The values it starts with: module → `<kind>.<key>` → value. */
  readonly values?: Record<string, Record<string, unknown>>;
}): Promise<ProvisionerDouble> {
  const { bus, node } = options;
  const values = new Map<string, unknown>();
  for (const [module, byKey] of Object.entries(options.values ?? {})) {
    for (const [kindKey, value] of Object.entries(byKey)) values.set(`${module}/${kindKey}`, value);
  }
  const asks: ProvisionAsk[] = [];
  const waiters: Array<{
    match: (ask: ProvisionAsk) => boolean;
    resolve(ask: ProvisionAsk): void;
  }> = [];
  const served: Served = await serve(bus, {
    name: PROVISION_SERVICE,
    version: "0.0.0",
    endpoints: [
      {
        name: "ask",
        subject: provisionSubject(node),
        handler: async (request) => {
          const parsed = ProvisionAsk.safeParse(request.json());
          if (!parsed.success) {
            throw new MeshError(
              ErrorCode.INVALID_INPUT,
              `not a provision ask: ${parsed.error.message}`,
            );
          }
          const ask = parsed.data;
          asks.push(ask);
          for (const waiter of [...waiters]) {
            if (waiter.match(ask)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(ask);
            }
          }
          if (ask.kind === "secret") {
            throw new MeshError(
              ErrorCode.REFUSED,
              "the provisioner serves no secret on the runtime's word",
            );
          }
          const id = `${ask.module}/${ask.kind}.${ask.key}`;
          if (!values.has(id)) {
            throw new MeshError(
              ErrorCode.NOT_FOUND,
              `${ask.module} declares no ${ask.kind} ${JSON.stringify(ask.key)} on ${node}`,
            );
          }
          return Promise.resolve({ value: values.get(id) });
        },
      },
    ],
  });
  const changed = (module: string, kind: "config" | "bound", key: string): void =>
    publish(bus, provisionChangedSubject(node), { module, kind, key });
  return {
    asks,
    set(module, kind, key, value) {
      values.set(`${module}/${kind}.${key}`, value);
      changed(module, kind, key);
    },
    remove(module, kind, key) {
      values.delete(`${module}/${kind}.${key}`);
      changed(module, kind, key);
    },
    nextAsk(match) {
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    stop: () => served.stop(),
    [Symbol.asyncDispose]: () => served.stop(),
  };
}
