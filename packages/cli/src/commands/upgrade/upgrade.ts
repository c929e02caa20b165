/**
 * `mesh upgrade <new mesh>` (issue 24 item 2, decision 0201): registers the new builds of the
 * mesh's own modules — the host (`mesh-host`), delivery's parts and the runtime (`node-tools`) —
 * from a new version of the mesh: its folder (a checkout built with `npm run build`, or the packed
 * CLI's), its `shipped-parts` folder, or the packed CLI's tarball. Each is then wanted like any
 * module's newest build, in waves (decision 0130): every node's host hands the node over to the
 * new host build (decision 0200), the runtime is replaced without a gap, delivery restarts on its
 * node. The version's shipped parts are copied under `<root>/versions/<version>-<digest>/`, where
 * their registrations point; its runtime is registered where it is (its folder resolves its
 * packages from beside it, as `mesh up` registers this CLI's).
 *
 * It writes what the builder would (the builds are prebuilt, their digests known), so it speaks as
 * the controller: it runs where `mesh up` runs, with its root.
 */
import { cp, mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { KvBucket, MeshBus, sha256 } from "@mesh/bus";
import {
  readShippedParts,
  registerModule,
  registerShippedPart,
  unpackArchive,
} from "@mesh/delivery";
import {
  Bucket,
  ErrorCode,
  HOST_MODULE,
  MESH_VERSION,
  MeshError,
  Principal,
  RUNTIME_MODULE,
  SHIPPED_PARTS_INDEX,
  buildKey,
  targetModuleKey,
  type ShippedParts,
} from "@mesh/protocol";
import { rootOf } from "../../find-mesh.js";
import { credentialPath, rootPaths } from "../../mesh-root.js";
import { ExitCode } from "../../output.js";
import {
  act,
  connect,
  meshVerb,
  note,
  out,
  printJson,
  table,
  type MeshOptions,
} from "../../verb.js";

/** One module `mesh upgrade` registered: its build (the builder's to make, for the runtime). */
export interface Upgraded {
  readonly module: string;
  readonly build: string | undefined;
  /** Whether this upgrade wrote it (false: it stood already). */
  readonly written: boolean;
}

/** A new version of the mesh, found: where its shipped parts and its runtime's folder are. */
interface NewMesh {
  readonly index: ShippedParts;
  /** The folder of its shipped parts (the index and the archives). */
  readonly parts: string;
  /** Its runtime module's folder, when it has one. */
  readonly nodeTools: string | undefined;
}

export function registerUpgradeVerb(program: Command): void {
  act(
    meshVerb(
      program,
      "upgrade",
      "Register the mesh's own builds (host, delivery, runtime) from a new version of the mesh; they roll out in waves like any module.",
    ).argument(
      "<mesh>",
      "the new mesh: its folder (a built checkout, or the packed CLI), its shipped-parts folder, or the packed CLI's .tgz",
    ),
    upgradeVerb,
  );
}

export async function upgradeVerb(given: string, options: MeshOptions): Promise<ExitCode> {
  const root = resolve(rootOf(options));
  // The mesh's controller first: nothing is unpacked or kept under a root that is no mesh's.
  await using admin = await asController(root);
  await using operator = await connect(options);
  const found = await findNewMesh(resolve(given), root);
  const kept = await keep(found, root);
  note(
    options,
    `upgrading to mesh ${kept.index.version} (this CLI is ${MESH_VERSION}) from ${resolve(given)}`,
  );
  const by = `mesh upgrade (${operator.credential.user})`;
  const builds = await KvBucket.open(admin, Bucket.builds);
  const registered: Upgraded[] = [];
  for (const part of kept.index.parts) {
    const before = new Set(await builds.keys(`${part.module}.*`));
    const { module, build } = await registerShippedPart(admin, part, { dir: kept.parts, by });
    registered.push({ module, build, written: !before.has(buildKey(module, build)) });
  }
  if (kept.nodeTools !== undefined)
    registered.push(await registerRuntime(operator, kept.nodeTools, by));
  await assignHostEverywhere(operator, by);
  if (options.json === true) {
    printJson({ ok: true, version: kept.index.version, from: MESH_VERSION, modules: registered });
    return ExitCode.ok;
  }
  out(
    table(
      ["module", "build", "registered"],
      registered.map((r) => [
        r.module,
        r.build ?? "(the builder builds it)",
        r.written ? "new" : "already there",
      ]),
    ).join("\n"),
  );
  out(
    `each new build rolls out in waves like any module's (the canary first); follow it with \`mesh rollout status\`, halt it with \`mesh rollout abort <module>\``,
  );
  return ExitCode.ok;
}

/** The shipped parts and the runtime's folder of the mesh at `path` (a tarball is unpacked first). */
async function findNewMesh(path: string, root: string): Promise<NewMesh> {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${path} does not exist; give the new mesh's folder, its shipped-parts folder, or its packed .tgz`,
      { path },
    );
  }
  let folder = path;
  if (info.isFile()) folder = await unpackTarball(path, root);
  // The packed CLI (a tarball's package/), a checkout, or the shipped parts' folder itself.
  const places = [
    {
      parts: join(folder, "package", "shipped-parts"),
      nodeTools: join(folder, "package", "node-tools"),
    },
    { parts: join(folder, "shipped-parts"), nodeTools: join(folder, "node-tools") },
    {
      parts: join(folder, "packages", "cli", "dist", "shipped-parts"),
      nodeTools: join(folder, "packages", "runtime", "node-tools"),
    },
    { parts: folder, nodeTools: undefined },
  ];
  for (const place of places) {
    if ((await stat(join(place.parts, SHIPPED_PARTS_INDEX)).catch(() => undefined)) === undefined)
      continue;
    const index = await readShippedParts(place.parts);
    const nodeTools =
      place.nodeTools !== undefined &&
      (await stat(place.nodeTools).catch(() => undefined))?.isDirectory()
        ? place.nodeTools
        : undefined;
    return { index, parts: place.parts, nodeTools };
  }
  throw new MeshError(
    ErrorCode.USAGE,
    `${path} holds no shipped parts (${SHIPPED_PARTS_INDEX} of a mesh built with \`npm run build\`, or of the packed CLI); give the new mesh's folder, its shipped-parts folder, or its packed .tgz`,
    { path },
  );
}

/** Unpacks a tarball of the packed CLI under the root (checked as any archive the mesh unpacks). */
async function unpackTarball(file: string, root: string): Promise<string> {
  const bytes = await readFile(file);
  const into = join(root, "upgrades", sha256(bytes).slice(0, 16));
  await rm(into, { recursive: true, force: true });
  await mkdir(join(root, "upgrades"), { recursive: true, mode: 0o700 });
  await unpackArchive(bytes, into, { what: file });
  return into;
}

/**
 * The version's shipped parts copied to `<root>/versions/<version>-<digest>/`, where their
 * registrations point (a folder given for the upgrade may go away after).
 */
async function keep(found: NewMesh, root: string): Promise<NewMesh> {
  const digests = found.index.parts.map((p) => p.source.digest).join(",");
  const home = join(
    root,
    "versions",
    `${found.index.version}-${sha256(Buffer.from(digests)).slice(0, 12)}`,
  );
  const parts = join(home, "shipped-parts");
  const staging = await mkdtemp(join(tmpdir(), "mesh-upgrade-"));
  try {
    await cp(found.parts, join(staging, "shipped-parts"), { recursive: true });
    await rm(home, { recursive: true, force: true });
    await mkdir(join(root, "versions"), { recursive: true, mode: 0o700 });
    await cp(staging, home, { recursive: true });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return { index: await readShippedParts(parts), parts, nodeTools: found.nodeTools };
}

/** The controller's connection `mesh up` keeps under the root: the builds are written as it. */
async function asController(root: string): Promise<MeshBus> {
  const file = credentialPath(rootPaths(root), Principal.controller);
  try {
    return await MeshBus.connectWithFile(file, { name: "mesh-upgrade" });
  } catch (error) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `mesh upgrade writes the mesh's own builds as its controller, whose credential is not at ${file} (${(error as Error).message}); run it where \`mesh up\` runs, with --root naming its root`,
      { path: file, cause: error },
    );
  }
}

/** The runtime from the version's folder: the builder builds it if it is another. */
async function registerRuntime(operator: MeshBus, folder: string, by: string): Promise<Upgraded> {
  const before = (await (await KvBucket.open(operator, Bucket.modules)).get(RUNTIME_MODULE))?.value;
  const { manifest } = await registerModule(operator, folder, { by });
  const moved = before?.source.kind !== "directory" || before.source.path !== folder;
  return { module: manifest.module, build: undefined, written: moved };
}

/** The host build is wanted on every node (mesh up assigns it; an older mesh may not have). */
async function assignHostEverywhere(operator: MeshBus, by: string): Promise<void> {
  const assignments = await KvBucket.open(operator, Bucket.assignments);
  const key = targetModuleKey({ all: true }, HOST_MODULE);
  if ((await assignments.get(key)) === undefined)
    await assignments.put(key, { by, at: new Date().toISOString() });
}
