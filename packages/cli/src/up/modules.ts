/**
 * The modules `mesh up` registers itself: `node-tools`, which ships with the mesh and is assigned
 * to every node, and with `--demo` the examples. Registering is the operator's write that
 * `mesh module add` makes; it is skipped when the same source is already registered, so a second
 * `mesh up` changes nothing.
 */
import { join, resolve } from "node:path";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { registerModule } from "@mesh/delivery";
import { Bucket, targetModuleKey } from "@mesh/protocol";
import { EXAMPLES_DIR } from "../shipped.js";

/** Where the shipped runtime module's source is (in this checkout, or in the packed CLI). */
export { NODE_TOOLS_SOURCE } from "../shipped.js";

/** The examples `--demo` runs. */
export const DEMO_MODULES = ["hello", "counter", "board", "broken"] as const;
export const examplesSource = (module: string): string => join(EXAMPLES_DIR, module);

/** Registers the folder as a module unless it already is, and assigns it to every node. */
export async function registerAndAssignEverywhere(
  bus: MeshBus,
  folder: string,
  options: { by: string; signal: AbortSignal; say: (line: string) => void },
): Promise<string> {
  const modules = await KvBucket.open(bus, Bucket.modules);
  const path = resolve(folder);
  let module: string | undefined;
  for (const key of await modules.keys(">", { signal: options.signal })) {
    const entry = await modules.get(key, { signal: options.signal });
    if (entry?.value.source.kind === "directory" && entry.value.source.path === path) module = key;
  }
  if (module === undefined) {
    const { manifest } = await registerModule(bus, path, {
      by: options.by,
      signal: options.signal,
    });
    module = manifest.module;
    options.say(`registered ${module} from ${path}`);
  }
  const assignments = await KvBucket.open(bus, Bucket.assignments);
  const key = targetModuleKey({ all: true }, module);
  if ((await assignments.get(key, { signal: options.signal })) === undefined) {
    await assignments.put(
      key,
      { by: options.by, at: new Date().toISOString() },
      { signal: options.signal },
    );
    options.say(`assigned ${module} to every node`);
  }
  return module;
}
