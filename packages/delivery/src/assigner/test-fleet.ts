/**
 * A small fleet on a test bus for the assigner's tests: one module, hello, assigned to all (or
 * another module, such as the runtime node-tools, with a manifest of its own).
 */
import { createHash } from "node:crypto";
import { KvBucket, ensureLayout, type MeshBus } from "@mesh/bus";
import { Bucket, type Manifest } from "@mesh/protocol";
import { natsOf } from "@mesh/bus/internal";

export const NODE = "n0";
export const T0 = "2026-01-01T00:00:00.000Z";

/** A fresh layout: every bucket emptied by destroying and creating it again. */
export async function emptyLayout(admin: MeshBus): Promise<void> {
  for (const bucket of Object.values(Bucket)) {
    const kv = await natsOf(admin).kvm.open(bucket);
    await kv.destroy().catch(() => undefined);
  }
  await ensureLayout(admin);
}

export async function seedFleet(
  admin: MeshBus,
  options: { nodes: number; builds?: number; module?: Module },
): Promise<string[]> {
  const module = options.module ?? HELLO;
  const presence = await KvBucket.open(admin, Bucket.presence);
  const assignments = await KvBucket.open(admin, Bucket.assignments);
  await assignments.put(`all.${module.name}`, { by: "ada", at: T0 });
  for (let i = 1; i <= options.nodes; i++) await presence.put(`n${i}`, presenceOf(`n${i}`));
  const ids: string[] = [];
  for (let seq = 1; seq <= (options.builds ?? 1); seq++)
    ids.push(await addBuildOf(admin, module, seq));
  return ids;
}

export function presenceOf(node: string, heartbeat = T0) {
  return {
    node,
    facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0" },
    publicKey: "k",
    heartbeat,
  };
}

/** A module of the test fleet: its name, and its manifest's build `seq` (a bundle of that digest). */
export interface Module {
  readonly name: string;
  readonly manifest: (digest: string) => Manifest;
}

/** The fields a manifest has, empty. */
const emptyManifest = (): Omit<Manifest, "module" | "bundles"> => ({
  processes: [],
  states: [],
  reads: [],
  calls: [],
  config: {},
  "own-secrets": {},
});

/** A module named `name` whose manifest is empty but for what `fill` gives for a digest. */
const testModule = (
  name: string,
  fill: (digest: string) => Pick<Manifest, "bundles"> & Partial<Manifest>,
): Module => ({
  name,
  manifest: (digest) => ({ ...emptyManifest(), module: name, ...fill(digest) }),
});

/** hello: one tools bundle. */
export const HELLO = testModule("hello", (digest) => ({
  bundles: [
    {
      name: "tools",
      language: "typescript",
      entrypoints: ["src/tools.ts"],
      loads: ["src/tools.ts"],
      digest,
      size: 1,
    },
  ],
}));

/** node-tools, the tool runtime, as its manifest is (packages/runtime/node-tools/mesh.yaml). */
export const NODE_TOOLS = testModule("node-tools", (digest) => ({
  bundles: [
    { name: "runtime", language: "typescript", entrypoints: ["src/main.ts"], digest, size: 1 },
  ],
  "own-secrets": { broker: { path: "broker.json" } },
}));

export async function addHelloBuild(admin: MeshBus, seq: number): Promise<string> {
  return addBuildOf(admin, HELLO, seq);
}

/** Build `seq` of a module, built, its manifest stored: `<seq>-abcdef01`. */
export async function addBuildOf(admin: MeshBus, module: Module, seq: number): Promise<string> {
  const builds = await KvBucket.open(admin, Bucket.builds);
  const manifests = await KvBucket.open(admin, Bucket.manifests);
  const digest = String(seq).repeat(64).slice(0, 64);
  const manifest = module.manifest(digest);
  // Content-addressed, as the builder stores it: two modules' manifests never share a key.
  const manifestDigest = createHash("sha256").update(JSON.stringify(manifest)).digest("hex");
  await manifests.put(manifestDigest, manifest);
  const id = `${seq}-abcdef01`;
  await builds.put(`${module.name}.${id}`, {
    module: module.name,
    build: id,
    status: "built",
    candidate: seq,
    manifestDigest,
    bundles: manifest.bundles.map((b) => ({ name: b.name, digest, size: 1 })),
    log: "",
    timings: { started: T0 },
  });
  return id;
}
