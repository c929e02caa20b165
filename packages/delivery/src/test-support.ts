/**
 * Helpers for this package's tests only (never exported from the package): module folders written
 * to temporary folders that are removed after the test file, the manifests they hold, and a real
 * bus with the layout, the operator and delivery connected on their own grants.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { MeshBus, ensureLayout } from "@mesh/bus";
import { credentialFor, startTestServer, type TestServer } from "@mesh/bus/testing";
import { buildGrant, operatorGrant } from "@mesh/core";
import { Principal } from "@mesh/protocol";
import { partsPrincipalGrant } from "./parts.js";

const folders: string[] = [];
let cleaning = false;

/** A new empty temporary folder (`mesh-<name>-…`), removed when the test file ends. */
export async function tempFolder(name: string): Promise<string> {
  if (!cleaning) {
    cleaning = true;
    after(async () => {
      for (const folder of folders) await rm(folder, { recursive: true, force: true });
    });
  }
  const folder = await mkdtemp(join(tmpdir(), `mesh-${name}-`));
  folders.push(folder);
  return folder;
}

/** A temporary folder holding `files` (path → text), such as a module's source. */
export async function folderWith(files: Record<string, string>, name = "src"): Promise<string> {
  const folder = await tempFolder(name);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(folder, path, ".."), { recursive: true });
    await writeFile(join(folder, path), text);
  }
  return folder;
}

/** The mesh.yaml of a module with one bundle (`app` unless named) in `language`, run as process main. */
export const processManifest = (
  module: string,
  language: string,
  entry: string,
  bundle = "app",
): string =>
  [
    `module: ${module}`,
    "bundles:",
    `  - name: ${bundle}`,
    `    language: ${language}`,
    `    entrypoints: [${entry}]`,
    "processes:",
    "  - name: main",
    `    bundle: ${bundle}`,
    "",
  ].join("\n");

/** The mesh.yaml of a module with one typescript tools bundle that loads `entry`. */
export const toolsManifest = (module: string, entry = "src/tools.ts"): string =>
  [
    `module: ${module}`,
    "bundles:",
    "  - name: tools",
    "    language: typescript",
    `    entrypoints: [${entry}]`,
    `    loads: [${entry}]`,
    "",
  ].join("\n");

/** The mesh.yaml of the module `pre`: a prebuilt bundle `app` from `source`, run by a process. */
export const prebuiltManifest = (source: string, digest: string): string =>
  [
    "module: pre",
    "bundles:",
    "  - name: app",
    "    language: prebuilt",
    `    source: ${JSON.stringify(source)}`,
    `    digest: "${digest}"`,
    "processes:",
    "  - name: app",
    "    bundle: app",
    "    run: [node, bin/run.js]",
    "",
  ].join("\n");

export interface DeliveryBus extends AsyncDisposable {
  readonly server: TestServer;
  /** The admin's connection (it made the layout). */
  readonly admin: MeshBus;
  /** Connected with the operator's grant, as `mesh module add` is. */
  readonly operator: MeshBus;
  /** Connected with delivery's grant, as the indexer and the builder are. */
  readonly delivery: MeshBus;
  /** Connects as the build modules' principal (a connection of its own each time). */
  connectBuild(): Promise<MeshBus>;
}

/** A real bus with the layout, and the operator and delivery connected on their own grants. */
export async function startDeliveryBus(node = "n0"): Promise<DeliveryBus> {
  const principals = [
    {
      module: Principal.delivery,
      permissions: await partsPrincipalGrant(Principal.delivery, { node }),
    },
    { module: Principal.operator, permissions: operatorGrant({ node }) },
    { module: Principal.build, permissions: buildGrant({ node }) },
  ];
  const server = await startTestServer({
    users: principals.map(({ module, permissions }) => ({
      user: module,
      password: `${module}-pw`,
      permissions,
    })),
  });
  const connect = (module: string, user = { user: module, password: `${module}-pw` }) =>
    MeshBus.connect(credentialFor(server, user, { node, module }));
  const admin = await connect(Principal.controller, server.admin);
  await ensureLayout(admin);
  const operator = await connect(Principal.operator);
  const delivery = await connect(Principal.delivery);
  return {
    server,
    admin,
    operator,
    delivery,
    connectBuild: () => connect(Principal.build),
    async [Symbol.asyncDispose]() {
      await delivery.close();
      await operator.close();
      await admin.close();
      await server.stop();
    },
  };
}
