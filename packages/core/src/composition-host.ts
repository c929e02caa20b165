/**
 * The node's host build (decision 0200): the `mesh-host` module's one bundle, composed as the
 * node's one `host` resource. The host fetches and verifies it like any bundle, and its launcher
 * hands the node over to it.
 */
import { HOST_MODULE, HOST_RESOURCE_ID, type HostResource, type Manifest } from "@mesh/protocol";
import { builtEntrypoint } from "./bundle-run.js";
import { route, sortedKeys, type Context } from "./composition-resources.js";

/** The host resource of the `mesh-host` module's manifest; refused (every reason) when unusable. */
export function hostResourceOf(m: Manifest, c: Context): HostResource | undefined {
  const where = `${HOST_MODULE} is wanted on ${c.node}`;
  const bundle = m.bundles[0];
  const entry = bundle?.entrypoints[0];
  if (
    m.bundles.length !== 1 ||
    bundle === undefined ||
    entry === undefined ||
    bundle.entrypoints.length !== 1 ||
    m.processes.length > 0
  ) {
    c.refuse(
      "host-one-bundle",
      `${where} and its build has ${m.bundles.length} bundle(s), ${bundle?.entrypoints.length ?? 0} entrypoint(s) and ${m.processes.length} process(es); the host is one bundle with one entrypoint, run by the node's launcher`,
      `give ${HOST_MODULE}'s manifest exactly one bundle with one entrypoint and no process, then build it again`,
      HOST_MODULE,
    );
    return undefined;
  }
  const source = route(HOST_MODULE, HOST_RESOURCE_ID, bundle, c);
  if (source === undefined || bundle.digest === undefined) return undefined;
  return sortedKeys({
    id: HOST_RESOURCE_ID,
    type: "host" as const,
    module: HOST_MODULE,
    source,
    digest: bundle.digest,
    entry: builtEntrypoint(bundle.language, entry),
  });
}
