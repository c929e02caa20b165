/**
 * Delivery's parts as modules (decision 0190): `mesh up` starts no indexer, builder or assigner of
 * its own. It registers `mesh-indexer`, `mesh-builder` and `mesh-assigner` from the prebuilt
 * archives the CLI ships (their builds written at once: the digests are known, so no builder is
 * needed to start the builder), assigns them to the delivery node (`--delivery-on NODE`; by default
 * where they are assigned already, else this machine's node), and — only where no want for a part
 * stands on that node, because nothing else writes wants before the assigner runs — writes the
 * want the assigner would write. The delivery node's host then runs them like any module, with the
 * credential their manifests declare, and the assigner's first pass takes the wants over.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { readShippedParts, registerShippedPart, type ShippedRegistration } from "@mesh/delivery";
import {
  Bucket,
  MESH_PARTS,
  PRESENCE_GONE_MS,
  checkNodeName,
  nodeModuleKey,
  parseTargetModuleKey,
  targetModuleKey,
  type Want,
} from "@mesh/protocol";
import { SHIPPED_PARTS } from "../shipped.js";

export interface DeliveryPlacement {
  /** The node the parts are assigned to. */
  readonly node: string;
  /** Each part's build, as registered from what the CLI ships. */
  readonly parts: readonly ShippedRegistration[];
  /** The parts whose want `mesh up` wrote because none stood (a new root, or a new node). */
  readonly bootstrapped: readonly string[];
}

export interface DeliveryPartsOptions {
  /** A connection that may write what the indexer, builder and assigner write (the controller's). */
  readonly admin: MeshBus;
  /** This machine's node. */
  readonly here: string;
  /** `--delivery-on`: move the parts there. */
  readonly deliveryOn?: string | undefined;
  readonly by: string;
  readonly signal: AbortSignal;
  readonly say: (line: string) => void;
  /** Where the shipped parts are (the CLI's own by default). */
  readonly dir?: string;
}

/** Registers, places and (where nothing wants them yet) starts delivery's parts. */
export async function startDeliveryParts(
  options: DeliveryPartsOptions,
): Promise<DeliveryPlacement> {
  const { admin, signal, say } = options;
  const dir = options.dir ?? SHIPPED_PARTS;
  const index = await readShippedParts(dir);
  const parts: ShippedRegistration[] = [];
  // The host build is every node's, not the delivery node's (up/host-module.ts).
  for (const part of index.parts.filter((p) => MESH_PARTS.has(p.module))) {
    const registered = await registerShippedPart(admin, part, { dir, by: options.by, signal });
    if (registered.written) say(`registered ${part.module} build ${registered.build} (prebuilt)`);
    parts.push(registered);
  }
  const node = await placeParts(options, parts);
  const wants = await KvBucket.open(admin, Bucket.wants);
  const bootstrapped: string[] = [];
  for (const part of parts) {
    const key = nodeModuleKey(node, part.module);
    if ((await wants.get(key, { signal })) !== undefined) continue;
    const want: Want = {
      build: part.build,
      manifestDigest: part.manifestDigest,
      fingerprint: "",
      rule: "newest",
      reason:
        `written by mesh up to start delivery on ${node}: nothing writes wants before the assigner runs ` +
        `(decision 0190); the assigner's first pass takes it over`,
    };
    await wants.put(key, want, { signal });
    bootstrapped.push(part.module);
  }
  if (bootstrapped.length > 0)
    say(`wanted ${bootstrapped.join(", ")} on ${node} to start delivery`);
  await sayWhenAbsent(admin, node, options);
  return { node, parts, bootstrapped };
}

/**
 * The node the parts run on: `--delivery-on`, whose assignments replace every other of theirs;
 * else where they are assigned already (a second `mesh up` keeps the operator's choice); else here.
 */
async function placeParts(
  options: DeliveryPartsOptions,
  parts: readonly ShippedRegistration[],
): Promise<string> {
  const { signal } = options;
  const assignments = await KvBucket.open(options.admin, Bucket.assignments);
  const standing = new Map<string, string[]>();
  for (const part of parts) {
    const nodes = (await assignments.keys(`*.${part.module}`, { signal }))
      .map((key) => parseTargetModuleKey(key).target)
      .map((target) => ("node" in target ? target.node : "all"));
    standing.set(part.module, nodes);
  }
  const kept = [...new Set([...standing.values()].flat())].filter((n) => n !== "all").sort();
  const node =
    options.deliveryOn !== undefined
      ? checkNodeName(options.deliveryOn)
      : kept.length === 1 && kept[0] !== undefined
        ? kept[0]
        : options.here;
  const at = new Date().toISOString();
  for (const part of parts) {
    for (const other of standing.get(part.module) ?? []) {
      if (other === node) continue;
      await assignments.delete(
        targetModuleKey(other === "all" ? { all: true } : { node: other }, part.module),
        { signal },
      );
    }
    if (!(standing.get(part.module) ?? []).includes(node)) {
      await assignments.put(
        targetModuleKey({ node }, part.module),
        { by: options.by, at },
        { signal },
      );
    }
  }
  const moved = kept.filter((n) => n !== node);
  options.say(
    `delivery (${[...MESH_PARTS].sort().join(", ")}) runs on ${node}` +
      (moved.length > 0 ? `, moved from ${moved.join(", ")}` : ""),
  );
  return node;
}

/** Says so when the delivery node has no host present: nothing is built or wanted until it has. */
async function sayWhenAbsent(
  admin: MeshBus,
  node: string,
  options: DeliveryPartsOptions,
): Promise<void> {
  if (node === options.here) return;
  const presence = await (await KvBucket.open(admin, Bucket.presence)).get(node, options);
  const heard = presence === undefined ? undefined : Date.parse(presence.value.heartbeat);
  if (heard !== undefined && Date.now() - heard < PRESENCE_GONE_MS) return;
  options.say(
    `${node} has no host present${heard === undefined ? "" : ` (last heard ${new Date(heard).toISOString()})`}: ` +
      `nothing is built or wanted until it joins and runs delivery (\`mesh join\` there), or run \`mesh up --delivery-on <node>\` with a node that is present`,
  );
}
