/**
 * What this package's tests share, and other packages' tests through `@mesh/controller/testing`
 * (the controller fixture): a real bus with the layout,
 * a controller on it whose broker reloads the server through its folder, and the manifests,
 * wants and presences the scenarios are made of.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  Bucket,
  nodeModuleKey,
  type Credential,
  type Manifest,
  type ManifestInput,
  type Presence,
  type Want,
  type Composed,
} from "@mesh/protocol";
import { checkManifest, fingerprintOf, operatorGrant } from "@mesh/core";
import {
  KvBucket,
  MeshBus,
  ensureLayout,
  generateNodeKeys,
  unseal,
  type NodeKeys,
} from "@mesh/bus";
import {
  FULL_PERMISSIONS,
  hashPassword,
  serverFolderSink,
  type ServerUser,
} from "@mesh/bus/server";
import {
  credentialFor,
  deadline,
  firstPut,
  startTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import { Controller, type ControllerOptions } from "./controller.js";

export const d = (c: string): string => c.repeat(64 / c.length);

/** A checked manifest; a fixture that breaks a rule fails the test at once. */
export function manifest(input: ManifestInput): Manifest {
  const check = checkManifest(input);
  if (!check.ok) throw new Error(`fixture ${input.module}: ${JSON.stringify(check.problems)}`);
  return check.manifest;
}

export const counter = manifest({
  module: "counter",
  bundles: [
    { name: "daemon", language: "typescript", entrypoints: ["src/daemon.ts"], digest: d("2b") },
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/tools.ts"],
      loads: ["src/tools.ts"],
      digest: d("3c"),
    },
  ],
  processes: [{ name: "daemon", bundle: "daemon" }],
  states: [
    { name: "counts", readable: true },
    { name: "private", readable: false },
  ],
  "own-secrets": { broker: { path: "broker.json" } },
});

export const viewerInput: ManifestInput = {
  module: "viewer",
  bundles: [
    { name: "daemon", language: "typescript", entrypoints: ["src/main.ts"], digest: d("4d") },
  ],
  processes: [{ name: "main", bundle: "daemon" }],
  reads: ["counter/counts"],
  "own-secrets": { broker: { path: "broker.json" } },
};
export const viewer = manifest(viewerInput);

export const hello = manifest({
  module: "hello",
  bundles: [
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/greet.ts"],
      loads: ["src/greet.ts"],
      digest: d("1a"),
    },
  ],
  config: { greeting: { default: "Hello" } },
  "own-secrets": { "api-token": { path: "api-token" } },
});

export const nodeTools = manifest({
  module: "node-tools",
  bundles: [
    { name: "runtime", language: "typescript", entrypoints: ["src/main.ts"], digest: d("6f") },
  ],
  "own-secrets": { broker: { path: "broker.json" } },
});

export const wantOf = (m: Manifest, build = "1-test"): Want => ({
  build,
  manifestDigest: fingerprintOf(m),
  fingerprint: "f",
  rule: "newest",
  reason: "the newest build",
});

export function presenceOf(node: string, keys: NodeKeys, version = "0.1.0"): Presence {
  return {
    node,
    facts: { hostname: node, os: "linux", arch: "x64", version },
    publicKey: keys.publicKey,
    heartbeat: new Date().toISOString(),
  };
}

/** A bus with the layout, the admin's connection, and a controller that can be (re)started. */
export interface Mesh extends AsyncDisposable {
  readonly server: TestServer;
  readonly admin: MeshBus;
  readonly dir: string;
  readonly adminUser: ServerUser;
  readonly operator: Credential;
  controller: Controller;
  startController(options?: Partial<ControllerOptions>): Promise<Controller>;
  put<T>(bucket: string, key: string, value: T): Promise<void>;
  want(node: string, m: Manifest, build?: string): Promise<void>;
  /** Waits until `mesh-composed.<node>` satisfies `until`; returns it with its revision. */
  composed(
    node: string,
    until: (c: Composed, revision: number) => boolean,
    what: string,
  ): Promise<{ value: Composed; revision: number }>;
}

export async function startMesh(): Promise<Mesh> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-controller-"));
  const adminCredential = credentialFor(server, server.admin, {
    node: "hub",
    module: "controller",
  });
  const admin = await MeshBus.connect(adminCredential);
  await ensureLayout(admin);
  const adminUser: ServerUser = {
    user: server.admin.user,
    passwordHash: await hashPassword(server.admin.password),
    permissions: FULL_PERMISSIONS,
  };
  const operatorPassword = "operator-password-for-tests";
  const operatorUser: ServerUser = {
    user: "hub.operator",
    passwordHash: await hashPassword(operatorPassword),
    permissions: operatorGrant({ node: "hub" }),
  };
  const operator = credentialFor(
    server,
    { user: "hub.operator", password: operatorPassword },
    { node: "hub", module: "operator" },
  );
  const mesh: Mesh = {
    server,
    admin,
    dir,
    adminUser,
    operator,
    controller: undefined as unknown as Controller,
    async startController(options = {}) {
      const controller = await Controller.create({
        bus: admin,
        dir,
        // Through the server's folder, as the controller reaches the bus of `mesh up`.
        sink: serverFolderSink(server.dir),
        staticUsers: () => Promise.resolve([adminUser, operatorUser]),
        ...options,
      });
      mesh.controller = controller;
      void controller.run({ signal: new AbortController().signal });
      await deadline(controller.ready, 20_000, "the controller's first pass");
      return controller;
    },
    async put(bucket, key, value) {
      const kv = await KvBucket.openWith(admin, bucket, z.unknown());
      await kv.put(key, value);
    },
    async want(node, m, build) {
      await mesh.put(Bucket.manifests, fingerprintOf(m), m);
      await mesh.put(Bucket.wants, nodeModuleKey(node, m.module), wantOf(m, build));
    },
    async composed(node, until, what) {
      const kv = await KvBucket.open(admin, Bucket.composed);
      return firstPut(kv, node, { until, what, timeout: 20_000 });
    },
    async [Symbol.asyncDispose]() {
      await mesh.controller?.stop();
      await admin.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return mesh;
}

/** A need's sealed content, opened with the node's key. */
export function openNeed(composed: Composed, id: string, keys: NodeKeys): string {
  const need = composed.resources.find((r) => r.id === id);
  if (need?.type !== "need" || need.sealed === undefined) {
    throw new Error(`${id} is not a sealed need in ${composed.node}'s composition`);
  }
  return unseal(keys.privateKey, need.sealed, id).toString("utf8");
}

export const newKeys = generateNodeKeys;
