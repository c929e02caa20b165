/**
 * Helpers for this package's tests only (never exported from the package): a real bus on which
 * one module speaks from n1 with its own grant, as the runtime would give it, and the module the
 * Go and Python SDKs' tests speak as.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Manifest, stateBucket } from "@mesh/protocol";
import { writeCredential } from "@mesh/bus";
import { busSuite, createBucket, credentialFor, type BusSuite } from "@mesh/bus/testing";
import { moduleGrant } from "@mesh/core";

type Hook = (fn: () => Promise<void>) => void;

// greeter, a go module on n1: what the Go and Python SDKs' tests reach, each declared so the
// grant holds it.
export const greeter = Manifest.parse({
  module: "greeter",
  bundles: [{ name: "app", language: "go", entrypoints: ["main.go"] }],
  processes: [{ name: "main", bundle: "app" }],
  states: [
    { name: "notes", readable: true },
    { name: "drafts", readable: false },
  ],
  reads: ["counter/counts"],
  calls: ["hello/greet", "hello/refuses", "hello/missing", "hello/slow"],
  config: { greeting: { default: "Hello" } },
  "own-secrets": { broker: { path: "broker.json" } },
});
export const counter = Manifest.parse({
  module: "counter",
  states: [{ name: "counts", readable: true }],
});

/** Filled in by the suite's `before`: read it inside the tests, never at the describe's level. */
export interface ModuleSuite extends BusSuite {
  /** A fresh folder, removed after the suite. */
  readonly dir: string;
  /** `<dir>/broker.json`: the module's own credential on n1, the file `MESH_BROKER_FILE` names. */
  readonly credentialFile: string;
}

/**
 * A bus with the mesh's layout, a bucket for each state the module keeps and for each of
 * `otherStates`, and a user `n1.<module>` on the grant `manifest` gives its module on n1 (which
 * must have no problems), whose credential is written to a fresh folder before the suite's tests;
 * `setUp` runs after that and `tearDown` first after them (busSuite's).
 */
export function moduleSuite(
  options: {
    readonly manifest: Manifest;
    /** The manifests of the modules whose states it reads: its own alone by default. */
    readonly owners?: Readonly<Record<string, Manifest>>;
    /** States other modules keep, as `[owner, state]`. */
    readonly otherStates?: ReadonlyArray<readonly [owner: string, state: string]>;
    readonly setUp?: () => Promise<void>;
    readonly tearDown?: () => Promise<void>;
  },
  hooks: { before: Hook; after: Hook },
): ModuleSuite {
  const { manifest } = options;
  const { module } = manifest;
  const { permissions, problems } = moduleGrant({
    node: "n1",
    manifest,
    owners: options.owners ?? { [module]: manifest },
  });
  const login = { user: `n1.${module}`, password: `${module}-password-0123456789` };
  let dir: string | undefined;
  const fx = busSuite(
    {
      module: "controller",
      layout: true,
      users: [{ ...login, permissions }],
      setUp: async () => {
        assert.deepEqual(problems, [], `${module}'s grant`);
        const own = manifest.states.map(({ name }) => [module, name] as const);
        for (const [owner, state] of [...own, ...(options.otherStates ?? [])])
          await createBucket(fx.admin, stateBucket(owner, state), { history: 1 });
        dir = await mkdtemp(join(tmpdir(), `mesh-sdk-${module}-`));
        await writeCredential(
          join(dir, "broker.json"),
          credentialFor(fx.server, login, { node: "n1", module }),
        );
        await options.setUp?.();
      },
      tearDown: async () => {
        await options.tearDown?.();
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      },
    },
    hooks,
  );
  const made = (): string => {
    if (dir === undefined) throw new Error("moduleSuite: read before the suite began");
    return dir;
  };
  return {
    get server() {
      return fx.server;
    },
    get admin() {
      return fx.admin;
    },
    connect: (user, as) => fx.connect(user, as),
    get dir() {
      return made();
    },
    get credentialFile() {
      return join(made(), "broker.json");
    },
  };
}
