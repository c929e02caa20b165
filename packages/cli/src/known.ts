/**
 * What the mesh knows of a module, for verbs that name one: whether it is registered, and the
 * manifests it declares its config keys and secrets in. A name the mesh does not know is refused
 * with the names it does know and the closest of them (a typo is the usual cause), unless the
 * operator passes `--force` to prepare something before the module is registered.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { closest } from "@mesh/core";
import { Bucket, ErrorCode, MeshError, type Manifest } from "@mesh/protocol";
import { readAll } from "./read-bucket.js";

/** The registered modules' names, sorted. */
export async function registeredModules(bus: MeshBus): Promise<string[]> {
  return (await (await KvBucket.open(bus, Bucket.modules)).keys()).sort();
}

/**
 * A refusal of `name`, which is not among `known`: it lists them, names the closest one when it
 * looks like a typo, and says `fix`.
 */
export function unknownName(input: {
  readonly what: string;
  readonly name: string;
  readonly known: readonly string[];
  /** Where the known names come from, e.g. "registered" or "declared by hello's manifest". */
  readonly knownAs: string;
  readonly fix: string;
  readonly module?: string;
  readonly key?: string;
}): MeshError {
  const guess = closest(input.name, input.known);
  const known =
    input.known.length === 0
      ? `none is ${input.knownAs}`
      : `${input.knownAs}: ${input.known.join(", ")}`;
  return new MeshError(
    ErrorCode.REFUSED,
    `no ${input.what} ${JSON.stringify(input.name)}` +
      `${guess === undefined ? "" : ` — did you mean ${JSON.stringify(guess)}?`} (${known}); ${input.fix}`,
    {
      ...(input.module === undefined ? {} : { module: input.module }),
      ...(input.key === undefined ? {} : { key: input.key }),
    },
  );
}

/**
 * Refuses a module that is not registered, unless `force` (then the verb prepares its value for a
 * module registered later; `forWhat` says what, and without it the refusal offers no --force).
 * Returns whether it is registered.
 */
export async function requireModule(
  bus: MeshBus,
  module: string,
  options: { readonly force?: boolean | undefined; readonly forWhat?: string } = {},
): Promise<boolean> {
  const known = await registeredModules(bus);
  if (known.includes(module)) return true;
  if (options.force === true) return false;
  throw unknownName({
    what: "module",
    name: module,
    known,
    knownAs: "registered",
    fix:
      options.forWhat === undefined
        ? "name a registered module (`mesh module list`)"
        : `name a registered module, register it first (\`mesh module add <folder>\`), or pass --force to ${options.forWhat} before it is registered`,
    module,
  });
}

/**
 * The manifests a module's names are checked against: those of the builds wanted for it (any
 * node) and of its newest built build (a key it adds may be set before the build is wanted).
 * Empty when none is known (not registered, or not built yet): then names cannot be checked.
 */
export async function knownManifests(bus: MeshBus, module: string): Promise<Manifest[]> {
  const digests = new Set<string>();
  for (const w of (await readAll(await KvBucket.open(bus, Bucket.wants), `*.${module}`)).values())
    digests.add(w.manifestDigest);
  const builds = [
    ...(await readAll(await KvBucket.open(bus, Bucket.builds), `${module}.*`)).values(),
  ].filter((b) => b.status === "built" && b.manifestDigest !== undefined);
  const newest = builds.sort((a, b) => b.candidate - a.candidate)[0];
  if (newest?.manifestDigest !== undefined) digests.add(newest.manifestDigest);
  const manifests = await KvBucket.open(bus, Bucket.manifests);
  const found: Manifest[] = [];
  // Sorted, so that where two wanted builds declare a name differently the answer is stable.
  for (const digest of [...digests].sort()) {
    const m = await manifests.get(digest);
    if (m !== undefined) found.push(m.value);
  }
  return found;
}
