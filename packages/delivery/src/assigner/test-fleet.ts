/** A small fleet on a test bus for the assigner's tests: one module, hello, assigned to all. */
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
  options: { nodes: number; builds?: number },
): Promise<string[]> {
  const presence = await KvBucket.open(admin, Bucket.presence);
  const assignments = await KvBucket.open(admin, Bucket.assignments);
  await assignments.put("all.hello", { by: "ada", at: T0 });
  for (let i = 1; i <= options.nodes; i++) await presence.put(`n${i}`, presenceOf(`n${i}`));
  const ids: string[] = [];
  for (let seq = 1; seq <= (options.builds ?? 1); seq++) ids.push(await addHelloBuild(admin, seq));
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

export async function addHelloBuild(admin: MeshBus, seq: number): Promise<string> {
  const builds = await KvBucket.open(admin, Bucket.builds);
  const manifests = await KvBucket.open(admin, Bucket.manifests);
  const digest = String(seq).repeat(64).slice(0, 64);
  const manifest: Manifest = {
    module: "hello",
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
    processes: [],
    states: [],
    reads: [],
    calls: [],
    config: {},
    "own-secrets": {},
  };
  const manifestDigest = (seq + 5).toString(16).repeat(64).slice(0, 64);
  await manifests.put(manifestDigest, manifest);
  const id = `${seq}-abcdef01`;
  await builds.put(`hello.${id}`, {
    module: "hello",
    build: id,
    status: "built",
    candidate: seq,
    manifestDigest,
    bundles: [{ name: "tools", digest, size: 1 }],
    log: "",
    timings: { started: T0 },
  });
  return id;
}
