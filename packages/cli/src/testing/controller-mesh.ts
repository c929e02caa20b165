/**
 * A real bus with its layout and a running controller, and an operator credential with exactly
 * the operator's grant, for tests of verbs that ask the controller (`mesh secret …`). The admin
 * connection seeds buckets the way the mesh's own processes would.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MeshBus, ensureLayout, writeCredential } from "@mesh/bus";
import { FULL_PERMISSIONS, hashPassword } from "@mesh/bus/server";
import { credentialFor, deadline, startTestServer, type TestServer } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { Controller } from "@mesh/controller";
import { Bucket, Principal, type Manifest } from "@mesh/protocol";
import { startView, type View } from "@mesh/view";
import { viewActions } from "../commands/view/view-actions.js";
import { helloManifest, seedRunning } from "./fixtures.js";
import { rawPutter } from "./operator-bus.js";
import { runMesh, type MeshRun, type RunMeshOptions } from "./run-mesh.js";

export interface ControllerMesh extends AsyncDisposable {
  readonly server: TestServer;
  readonly admin: MeshBus;
  readonly controller: Controller;
  /** The operator's credential file. */
  readonly credential: string;
  /** Writes a value into a bucket as the mesh's own processes would. */
  readonly put: (bucket: string, key: string, value: unknown) => Promise<void>;
  /** Registers a module (mesh-modules), as `mesh module add` does. */
  register(module: string): Promise<void>;
  /** Runs `mesh <args> --credential <the operator's>`. */
  run(args: readonly string[], options?: RunMeshOptions): Promise<MeshRun>;
}

const HUB = "hub";

export async function startControllerMesh(): Promise<ControllerMesh> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-cli-controller-mesh-"));
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: HUB, module: Principal.controller }),
  );
  await ensureLayout(admin);
  const password = "operator-password";
  const statics = [
    {
      user: server.admin.user,
      passwordHash: await hashPassword(server.admin.password),
      permissions: FULL_PERMISSIONS,
    },
    {
      user: `${HUB}.${Principal.operator}`,
      passwordHash: await hashPassword(password),
      permissions: operatorGrant({ node: HUB }),
    },
  ];
  const credential = join(dir, "operator.json");
  await writeCredential(
    credential,
    credentialFor(
      server,
      { user: `${HUB}.${Principal.operator}`, password },
      { node: HUB, module: Principal.operator },
    ),
  );
  const controller = await Controller.create({
    bus: admin,
    dir: join(dir, "controller"),
    sink: server.server,
    staticUsers: () => Promise.resolve(statics),
  });
  void controller.run({ signal: new AbortController().signal });
  await deadline(controller.ready, 20_000, "the controller's first pass");
  const put = rawPutter(admin);
  return {
    server,
    admin,
    controller,
    credential,
    put,
    run: (args, options) => runMesh([...args, "--credential", credential], options),
    register: (module) =>
      put(Bucket.modules, module, {
        module,
        source: { kind: "directory", path: `/src/${module}` },
        by: Principal.operator,
        at: new Date().toISOString(),
      }),
    async [Symbol.asyncDispose]() {
      await controller.stop();
      await admin.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A controller mesh with hello registered and running build 1-a on `nodes` since now, as
 * `manifest` declares it: where the view's browser tests start.
 */
export async function startHelloMesh(
  nodes: readonly string[],
  manifest: Manifest = helloManifest(),
): Promise<ControllerMesh> {
  const mesh = await startControllerMesh();
  await mesh.register("hello");
  await seedRunning(mesh.put, manifest, { nodes, build: "1-a", at: new Date().toISOString() });
  return mesh;
}

/**
 * The view as an operator runs it (\`mesh view\`: the CLI's actions, as ada) on a connection of
 * its own with the mesh's operator credential; closing the view closes that connection too.
 */
export async function operatorView(mesh: ControllerMesh): Promise<View> {
  const operator = await MeshBus.connectWithFile(mesh.credential);
  const view = await startView({ bus: operator, actor: "ada", actions: viewActions });
  const close = async (): Promise<void> => {
    await view.close();
    await operator.close();
  };
  return { ...view, close, [Symbol.asyncDispose]: close };
}
