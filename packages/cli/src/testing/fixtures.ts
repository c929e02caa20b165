/**
 * What the CLI's tests seed a mesh with: the hello module's manifest, the values the mesh's own
 * processes write (presence, have, wants), written once here instead of in every test.
 */
import { generateNodeKeys } from "@mesh/bus";
import { fingerprintOf } from "@mesh/core";
import { hello, manifest } from "@mesh/controller/testing";
import { Bucket, nodeKey, nodeModuleKey, type Manifest, type ManifestInput } from "@mesh/protocol";

/**
 * A checked hello manifest: the controller fixture's tools bundle (it loads src/greet.ts), and
 * what `more` adds.
 */
export function helloManifest(more: Omit<ManifestInput, "module" | "bundles"> = {}): Manifest {
  return manifest({ module: "hello", bundles: hello.bundles, ...more });
}

/** A node's presence as its host writes it, beating at `heartbeat`. */
export const presenceOf = (node: string, heartbeat: string, publicKey = "k") => ({
  node,
  facts: { hostname: node, os: "linux", arch: "x64", version: "0.1.0" },
  publicKey,
  heartbeat,
});

/** A module's `have` on a node as its host writes it: `build` running healthy since `since`. */
export const healthyHave = (build: string, since: string) => ({
  build,
  fingerprint: "f",
  health: "healthy",
  since,
  restarts: 0,
});

type Put = (bucket: string, key: string, value: unknown) => Promise<void>;

/**
 * A module built and wanted, as the builder and the assigner leave it: its manifest under its
 * digest, and `build` wanted on each of `nodes` (rule newest).
 */
export async function seedWanted(
  put: Put,
  manifest: Manifest,
  options: { readonly nodes: readonly string[]; readonly build: string; readonly reason?: string },
): Promise<void> {
  const digest = fingerprintOf(manifest);
  await put(Bucket.manifests, digest, manifest);
  for (const node of options.nodes) {
    await put(Bucket.wants, nodeModuleKey(node, manifest.module), {
      build: options.build,
      manifestDigest: digest,
      fingerprint: "f",
      rule: "newest",
      reason: options.reason ?? "test",
    });
  }
}

/**
 * A module wanted and running, as a fleet leaves it: `seedWanted`, and each of `nodes` present
 * since `at` with a real key (the controller can seal a secret for it), running `build` healthy.
 */
export async function seedRunning(
  put: Put,
  manifest: Manifest,
  options: { readonly nodes: readonly string[]; readonly build: string; readonly at: string },
): Promise<void> {
  await seedWanted(put, manifest, options);
  for (const node of options.nodes) {
    await put(
      Bucket.presence,
      nodeKey(node),
      presenceOf(node, options.at, generateNodeKeys().publicKey),
    );
    await put(
      Bucket.have,
      nodeModuleKey(node, manifest.module),
      healthyHave(options.build, options.at),
    );
  }
}
