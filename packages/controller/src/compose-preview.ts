/**
 * What the controller would send one node, computed from the bus as it stands (the node's wants,
 * their manifests, its presence, and every want's manifest for the owners its reads name), with
 * the same planning the controller runs: `mesh compose --node N`. Needs are shown unsealed (only
 * the controller holds passwords and the vault); keeps are not read (the operator's credential
 * does not read that stream), so reads are granted from manifests alone.
 */
import { z } from "zod";
import { Bucket, checkNodeName } from "@mesh/protocol";
import { KvBucket, readStanding, type MeshBus } from "@mesh/bus";
import { Fleet } from "./fleet.js";
import { intakeManifest } from "./manifest-intake.js";
import { DEFAULT_ARTIFACT_STORE, planNode, type NodePlan } from "./node-plan.js";

export async function previewComposition(
  bus: MeshBus,
  options: {
    readonly node: string;
    readonly artifactStore?: string;
    readonly signal?: AbortSignal;
  },
): Promise<NodePlan> {
  const node = checkNodeName(options.node);
  const call = options.signal === undefined ? {} : { signal: options.signal };
  const fleet = new Fleet();
  const wants = await KvBucket.open(bus, Bucket.wants);
  for (const [key, value] of await readStanding(wants, call)) fleet.setWant(key, value);
  const manifests = await KvBucket.openWith(bus, Bucket.manifests, z.unknown());
  const digests = new Set<string>();
  for (const n of fleet.nodes()) {
    for (const { want } of fleet.inputsOf(n).wanted.values()) digests.add(want.manifestDigest);
  }
  for (const digest of [...digests].sort()) {
    const entry = await manifests.get(digest, call).catch(() => undefined);
    if (entry !== undefined) fleet.setManifest(digest, intakeManifest(entry.value));
  }
  const presence = await (await KvBucket.open(bus, Bucket.presence)).get(node, call);
  if (presence !== undefined) fleet.setPresence(node, presence.value);
  return planNode(fleet.inputsOf(node), {
    servers: bus.credential.servers,
    artifactStore: options.artifactStore ?? DEFAULT_ARTIFACT_STORE,
    ownerStates: (m) => fleet.ownerStates(m),
  });
}
