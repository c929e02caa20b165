/**
 * Bundle archives: fetched by digest, verified before anything is read from them, checked entry
 * by entry, unpacked into a fresh folder beside the target and moved into place with one atomic
 * rename.
 *
 * Layout under a bundle's folder `<root>/bundles/<module>/`:
 * - `.<bundle>@<digest>`: one unpacked version (complete: it appears only by a rename);
 * - `<bundle>`: a symbolic link to the current version, replaced by a rename, so a reader sees
 *   the old bundle or the new, never a half-unpacked one or none;
 * - `.<bundle>.unpack-<random>`: an unpack in progress (a crash leaves it; the next unpack of
 *   that bundle removes it).
 *
 * Verified archives are kept in `<root>/cache/<digest>.tgz`, so an unchanged archive is never
 * fetched twice and a node that restarts without the bus can start what it ran.
 *
 * Refused before anything is written to the target: entries that escape (`..`, absolute paths),
 * symbolic links that point outside or that a later entry is written through, hard links,
 * devices, FIFOs and anything else that is not a file, folder or link, set-id bits, and more
 * than the configured bytes or entries (a decompression bomb is stopped while it is read).
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, mkdir, readFile, readdir, rename, rm, symlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Parser, extract, type ReadEntry } from "tar";
import { ArchiveEntryCheck, type ArchiveLimits } from "@mesh/core";
import { ErrorCode, MeshError, ObjectStore, isName, parseArtifactSource } from "@mesh/protocol";
import { delay, syncFolder, writeFileAtomic } from "@mesh/kit";

export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from "@mesh/core";

/** Where the host gets an archive's bytes: the artifact store, in the daemon. */
export type FetchArtifact = (
  digest: string,
  options: { signal?: AbortSignal },
) => Promise<Uint8Array | undefined>;

export const cachePath = (root: string, digest: string): string =>
  join(root, "cache", `${digest}.tgz`);

/**
 * The cached archive of `digest`, fetched first when the cache has none. The bytes are checked
 * against the digest before they are kept: DIGEST_MISMATCH when they differ, NOT_FOUND when the
 * store has no such archive.
 */
export async function fetchVerified(input: {
  readonly root: string;
  readonly module: string;
  readonly source: string;
  readonly digest: string;
  readonly fetch: FetchArtifact | undefined;
  readonly signal?: AbortSignal;
}): Promise<string> {
  const { root, module, source, digest } = input;
  const routed = parseArtifactSource(source);
  if (routed === undefined || routed.store !== ObjectStore.artifacts || routed.digest !== digest) {
    throw new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${module}'s bundle comes from ${JSON.stringify(source)}, which is not ${ObjectStore.artifacts}/${digest}; the host fetches only from the artifact store, by the digest it was told — recompose the node`,
      { module },
    );
  }
  const cached = cachePath(root, digest);
  try {
    const bytes = await readFile(cached);
    if (sha256(bytes) === digest) return cached;
    // A damaged cache entry is fetched again rather than trusted.
    await rm(cached, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (input.fetch === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module}'s bundle ${digest} is not in the local cache and the bus is not reachable; it is fetched when the bus returns`,
      { module, key: digest },
    );
  }
  const bytes = await input.fetch(
    digest,
    input.signal === undefined ? {} : { signal: input.signal },
  );
  if (bytes === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module}'s bundle ${digest} is not in ${ObjectStore.artifacts}; the build that made it was lost or never stored — rebuild the module`,
      { module, key: digest },
    );
  }
  const actual = sha256(bytes);
  if (actual !== digest) {
    throw new MeshError(
      ErrorCode.DIGEST_MISMATCH,
      `${module}'s bundle was asked for as ${digest}, but the store's bytes digest to ${actual}; nothing was unpacked — the store's object is damaged or replaced: rebuild the module`,
      { module, key: digest },
    );
  }
  await writeFileAtomic(cached, bytes, { mode: 0o600 });
  return cached;
}

/**
 * Reads every entry of the archive without writing anything, and refuses it (ARCHIVE_REFUSED)
 * at the first entry that breaks a rule. Stops reading as soon as a limit is passed.
 */
export async function checkArchive(
  file: string,
  limits: ArchiveLimits,
  context: { readonly module: string; readonly digest: string },
): Promise<{ entries: number; bytes: number }> {
  const rules = new ArchiveEntryCheck(limits);
  let refusal: MeshError | undefined;
  const refuse = (why: string): MeshError =>
    new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${context.module}'s bundle ${context.digest.slice(0, 12)}… is refused: ${why}; nothing of it was unpacked — fix the bundle and rebuild`,
      { module: context.module, key: context.digest },
    );
  await new Promise<void>((resolvePromise, reject) => {
    const input = createReadStream(file);
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        if (refusal === undefined) {
          const why = rules.check(entry);
          if (why !== undefined) {
            refusal = refuse(why.reason);
            input.destroy();
            parser.abort(refusal);
          }
        }
        entry.resume();
      },
    });
    const fail = (error: unknown): void => {
      reject(refusal ?? refuse(`it is not a readable tar archive (${(error as Error).message})`));
    };
    parser.on("error", fail);
    parser.on("abort", fail);
    input.on("error", fail);
    parser.on("end", () => (refusal === undefined ? resolvePromise() : reject(refusal)));
    input.on("data", (chunk) => parser.write(chunk as Buffer));
    input.on("end", () => parser.end());
  });
  if (rules.entries === 0) throw refuse("it holds no entries");
  return { entries: rules.entries, bytes: rules.bytes };
}

/** `<root>/bundles/<module>/<bundle>`, checked: the host writes bundles nowhere else. */
export function checkBundlePath(root: string, module: string, path: string): void {
  const base = join(root, "bundles", module);
  if (dirname(path) !== base || !isName("bundle", basename(path))) {
    throw new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${module}'s bundle is to be unpacked at ${JSON.stringify(path)}, which is not ${base}/<bundle>; the host unpacks bundles only under its root — recompose the node`,
      { module, path },
    );
  }
}

/** How long one bundle's extraction may take before it is given up. */
const UNPACK_DEADLINE_MS = 10 * 60_000;

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  const stop = new AbortController();
  const late = delay(ms, { signal: stop.signal }).then((passed) => {
    if (passed) throw new Error(`the extraction did not finish within ${ms / 1000} s`);
  });
  late.catch(() => undefined);
  return Promise.race([work, late as Promise<never>]).finally(() => stop.abort());
}

const versionName = (path: string, digest: string): string => `.${basename(path)}@${digest}`;

/**
 * Unpacks the checked archive into `.<bundle>@<digest>` beside `path` (through a temporary
 * folder, so the version folder is complete whenever it exists). The current link is not
 * touched: {@link placeBundle} does that.
 */
export async function unpackBeside(input: {
  readonly file: string;
  readonly path: string;
  readonly digest: string;
  readonly module: string;
  readonly limits: ArchiveLimits;
}): Promise<void> {
  const { file, path, digest, module } = input;
  const folder = dirname(path);
  const version = join(folder, versionName(path, digest));
  if (await exists(version)) return;
  await checkArchive(file, input.limits, { module, digest });
  await mkdir(folder, { recursive: true, mode: 0o755 });
  // Leftovers of an unpack a crash interrupted.
  for (const name of await readdir(folder)) {
    if (name.startsWith(`.${basename(path)}.unpack-`))
      await rm(join(folder, name), { recursive: true, force: true });
  }
  const temporary = join(folder, `.${basename(path)}.unpack-${randomBytes(6).toString("hex")}`);
  await mkdir(temporary, { mode: 0o755 });
  try {
    // A deadline, so an archive that stalls tar's extraction (none is known to pass the check)
    // fails its module instead of holding up every later apply of the node.
    await withDeadline(
      extract({
        file,
        cwd: temporary,
        strict: true,
        // As root, tar would give files the archive's owners; bundles belong to the host.
        preserveOwner: false,
        // Checked above; checked again, so a difference between the two readings cannot slip by.
        filter: (_path, entry) => {
          const type = (entry as ReadEntry).type;
          return (
            type === "File" || type === "OldFile" || type === "Directory" || type === "SymbolicLink"
          );
        },
      }),
      UNPACK_DEADLINE_MS,
    );
    await rename(temporary, version);
  } catch (error) {
    // tar may still be writing when it reports its error: a removal that fails now leaves the
    // folder to the next unpack of this bundle, which removes such leftovers first.
    await rm(temporary, { recursive: true, force: true }).catch(() => undefined);
    throw new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${module}'s bundle ${digest.slice(0, 12)}… could not be unpacked (${(error as Error).message}); nothing was moved into place — rebuild the module`,
      { module, key: digest, cause: error },
    );
  }
  await syncFolder(folder);
}

/**
 * Points `path` at the unpacked version of `digest`, with one rename, then removes the other
 * versions of that bundle.
 */
export async function placeBundle(path: string, digest: string): Promise<void> {
  const folder = dirname(path);
  const name = basename(path);
  const link = join(folder, `.${name}.link-${randomBytes(6).toString("hex")}`);
  await symlink(versionName(path, digest), link);
  try {
    const current = await lstat(path).catch(() => undefined);
    if (current !== undefined && !current.isSymbolicLink()) {
      // A real folder (from before this layout, or by hand): moved aside, then removed.
      const aside = join(folder, `.${name}.old-${randomBytes(6).toString("hex")}`);
      await rename(path, aside);
      await rm(aside, { recursive: true, force: true });
    }
    await rename(link, path);
  } catch (error) {
    await rm(link, { force: true });
    throw error;
  }
  await syncFolder(folder);
  for (const entry of await readdir(folder)) {
    if (entry.startsWith(`.${name}@`) && entry !== versionName(path, digest))
      await rm(join(folder, entry), { recursive: true, force: true });
  }
}

/** Removes a bundle: its link, every version and leftover; then its module's folder if empty. */
export async function removeBundle(path: string): Promise<void> {
  const folder = dirname(path);
  const name = basename(path);
  await rm(path, { recursive: true, force: true });
  const entries = await readdir(folder).catch(() => [] as string[]);
  for (const entry of entries) {
    if (entry.startsWith(`.${name}@`) || entry.startsWith(`.${name}.`))
      await rm(join(folder, entry), { recursive: true, force: true });
  }
  if ((await readdir(folder).catch(() => ["?"])).length === 0)
    await rm(folder, { recursive: true, force: true });
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined)) !== undefined;
}

/** Removes every cached archive whose digest is not in `keep`. */
export async function pruneCache(root: string, keep: ReadonlySet<string>): Promise<string[]> {
  const folder = join(root, "cache");
  const removed: string[] = [];
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    const digest = name.endsWith(".tgz") ? name.slice(0, -4) : undefined;
    if (digest === undefined || keep.has(digest)) continue;
    await rm(join(folder, name), { force: true });
    removed.push(digest);
  }
  return removed;
}
