/**
 * A real bus with its layout and the operator's credential with exactly the operator's grant, for
 * tests of the verbs that read and write buckets (`mesh status`, `mesh config`, …) without a
 * controller. The admin connection seeds buckets the way the mesh's own processes would.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { KvBucket, MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import { credentialFor, standIn, startTestServer, type TestServer } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { Principal, type Credential, type Permissions } from "@mesh/protocol";
import { runMesh, type MeshRun, type RunMeshOptions } from "./run-mesh.js";

/**
 * A principal beside the operator (one of the mesh's own, or a module such as the runtime), with
 * its grant: a user of its own and a credential file.
 */
export interface OtherPrincipal {
  readonly module: string;
  readonly permissions: Permissions;
}

export interface OperatorBusOptions {
  /** Names the test's temporary folder (`mesh-cli-<name>-…`). */
  readonly name: string;
  /** The node the credentials speak from. */
  readonly node?: string;
  readonly others?: readonly OtherPrincipal[];
}

export interface OperatorBus extends AsyncDisposable {
  readonly server: TestServer;
  /** The admin connection, for seeding buckets and reading them back. */
  readonly admin: MeshBus;
  readonly dir: string;
  /** A mesh root whose `credentials/operator.json` is the operator's, for `--root`. */
  readonly root: string;
  /** The operator's credential file. */
  readonly credential: string;
  /** The credential file of the operator or of one of the other principals. */
  credentialOf(module: string): string;
  /** The login of the operator or of one of the other principals, to connect with. */
  loginOf(module: string): Credential;
  /** Writes a value into a bucket as the mesh's own processes would. */
  readonly put: (bucket: string, key: string, value: unknown) => Promise<void>;
  /** Runs `mesh <args> --credential <the operator's>`. */
  run(args: readonly string[], options?: RunMeshOptions): Promise<MeshRun>;
  /** Runs `mesh <args> --json` as the operator; asserts it exited 0 and returns its output, parsed. */
  json<T>(args: readonly string[], options?: RunMeshOptions): Promise<T>;
  /** Runs `mesh <args>` as the operator; asserts it exited 0 and returns its output. */
  text(args: readonly string[], options?: RunMeshOptions): Promise<string>;
}

/**
 * Writes values into buckets without checking them against the buckets' schemas (a test seeds
 * what it needs, also what a schema refuses); each bucket is opened once.
 */
export function rawPutter(
  admin: MeshBus,
): (bucket: string, key: string, value: unknown) => Promise<void> {
  const opened = new Map<string, Promise<KvBucket<unknown>>>();
  return async (bucket, key, value) => {
    let kv = opened.get(bucket);
    if (kv === undefined) {
      kv = KvBucket.openWith(admin, bucket, z.unknown());
      opened.set(bucket, kv);
    }
    await (await kv).put(key, value);
  };
}

export async function startOperatorBus(options: OperatorBusOptions): Promise<OperatorBus> {
  const node = options.node ?? "hub";
  const principals: OtherPrincipal[] = [
    { module: Principal.operator, permissions: operatorGrant({ node }) },
    ...(options.others ?? []),
  ];
  const password = (module: string): string => `${module}-pw`;
  const server = await startTestServer({
    users: principals.map(({ module, permissions }) => ({
      user: module,
      password: password(module),
      permissions,
    })),
  });
  const dir = await mkdtemp(join(tmpdir(), `mesh-cli-${options.name}-`));
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node, module: Principal.controller }),
  );
  await ensureLayout(admin);
  const root = join(dir, "root");
  const credentialOf = (module: string): string => join(root, "credentials", `${module}.json`);
  const loginOf = (module: string): Credential =>
    credentialFor(server, { user: module, password: password(module) }, { node, module });
  for (const { module } of principals) await writeCredential(credentialOf(module), loginOf(module));
  const credential = credentialOf(Principal.operator);
  const run = (args: readonly string[], runOptions?: RunMeshOptions): Promise<MeshRun> =>
    runMesh([...args, "--credential", credential], runOptions);
  const text = async (args: readonly string[], runOptions?: RunMeshOptions): Promise<string> => {
    const done = await run(args, runOptions);
    assert.equal(done.code, 0, done.stderr + done.stdout);
    return done.stdout;
  };
  return {
    server,
    admin,
    dir,
    root,
    credential,
    credentialOf,
    loginOf,
    put: rawPutter(admin),
    run,
    text,
    json: async <T>(args: readonly string[], runOptions?: RunMeshOptions) =>
      JSON.parse(await text([...args, "--json"], runOptions)) as T,
    async [Symbol.asyncDispose]() {
      await admin.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

type Hook = (fn: () => Promise<void>) => void;

/**
 * An operator's bus for the tests of one `describe`: started in its `before` (from `options`, or
 * what `options()` resolves to), disposed of in its `after`. Read it inside the tests and hooks
 * that come after, never at the describe's level.
 */
export function operatorBusSuite(
  options: OperatorBusOptions | (() => Promise<OperatorBusOptions>),
  hooks: { before: Hook; after: Hook },
): OperatorBus {
  let bus: OperatorBus | undefined;
  hooks.before(async () => {
    bus = await startOperatorBus(typeof options === "function" ? await options() : options);
  });
  hooks.after(async () => {
    await bus?.[Symbol.asyncDispose]();
  });
  return standIn("operatorBusSuite", () => bus);
}
