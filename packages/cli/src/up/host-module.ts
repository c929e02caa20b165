/**
 * The host as a module (decision 0200): `mesh up` registers `mesh-host` from the build the CLI
 * ships (as it registers delivery's parts: its build written at once) and assigns it to every
 * node. Every host this CLI starts is that build (the launcher tells it its digest), so nothing is
 * handed over at start; a newer build — `mesh upgrade`, or `mesh up` with a newer CLI — rolls out
 * in waves and each node's host hands the node over to it.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { readShippedParts, registerShippedPart, type ShippedRegistration } from "@mesh/delivery";
import { Bucket, HOST_MODULE, targetModuleKey } from "@mesh/protocol";
import { SHIPPED_PARTS } from "../shipped.js";

/** The digest of the host build the CLI ships (its own host), or undefined when it ships none. */
export async function shippedHostDigest(dir = SHIPPED_PARTS): Promise<string | undefined> {
  try {
    const index = await readShippedParts(dir);
    return index.parts.find((p) => p.module === HOST_MODULE)?.bundles[0]?.digest;
  } catch {
    return undefined; // a checkout not built with its parts: the CLI's own host has no known digest
  }
}

/** Registers the shipped `mesh-host` (as the controller) and assigns it everywhere (as the operator). */
export async function startHostModule(options: {
  readonly admin: MeshBus;
  readonly operator: MeshBus;
  readonly by: string;
  readonly signal: AbortSignal;
  readonly say: (line: string) => void;
  readonly dir?: string;
}): Promise<ShippedRegistration | undefined> {
  const { signal } = options;
  const dir = options.dir ?? SHIPPED_PARTS;
  const part = (await readShippedParts(dir)).parts.find((p) => p.module === HOST_MODULE);
  if (part === undefined) return undefined;
  const registered = await registerShippedPart(options.admin, part, {
    dir,
    by: options.by,
    signal,
  });
  if (registered.written)
    options.say(`registered ${HOST_MODULE} build ${registered.build} (prebuilt)`);
  const assignments = await KvBucket.open(options.operator, Bucket.assignments);
  const key = targetModuleKey({ all: true }, HOST_MODULE);
  if ((await assignments.get(key, { signal })) === undefined) {
    await assignments.put(key, { by: options.by, at: new Date().toISOString() }, { signal });
    options.say(`assigned ${HOST_MODULE} to every node`);
  }
  return registered;
}
