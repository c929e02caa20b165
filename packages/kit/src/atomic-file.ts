/**
 * Writing a file so that a reader (or a host restarted after a crash) sees the old content or
 * the new, never half of either: write a temporary file beside it with its final mode and
 * owner, fsync it, rename it over the target, fsync the folder.
 */
import { randomBytes } from "node:crypto";
import { chown, link, mkdir, open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export interface AtomicWriteOptions {
  /** Default 0600: the host writes state and secrets. */
  readonly mode?: number;
  /** The mode of folders made on the way (default 0700). */
  readonly folderMode?: number;
  /** Owner to give the file (root only). */
  readonly owner?: { readonly uid: number; readonly gid: number };
  /**
   * false: no fsync of the file or its folder (still never half-written), for a file that
   * reports what a running process does and means nothing after a power cut (a status file).
   */
  readonly durable?: boolean;
}

export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const { folder, temporary } = await writeTemporary(path, data, options);
  try {
    if (options.owner !== undefined) await chown(temporary, options.owner.uid, options.owner.gid);
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  if (options.durable !== false) await syncFolder(folder);
}

/**
 * Makes a file that must be made once and then kept for good — a secret the mesh makes (the node's
 * key, the vault's key, the accounts' seeds): its whole content fsynced under a temporary name,
 * then linked to `path` only if nothing stands there (a link never replaces), then the folder
 * fsynced. A reader sees the whole file or none, also after a crash or a power cut, and of two
 * processes making it at once, one wins and the other is told. Returns whether this call made it;
 * false: a file stood there already and is left as it is (read it).
 */
export async function createFileOnce(
  path: string,
  data: string | Uint8Array,
  options: Pick<AtomicWriteOptions, "mode" | "folderMode"> = {},
): Promise<boolean> {
  const { folder, temporary } = await writeTemporary(path, data, options);
  let made = true;
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    made = false;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  await syncFolder(folder);
  return made;
}

/** `data` in a new temporary file beside `path` (its folder made first), fsynced unless not durable. */
async function writeTemporary(
  path: string,
  data: string | Uint8Array,
  options: Pick<AtomicWriteOptions, "mode" | "folderMode" | "durable">,
): Promise<{ folder: string; temporary: string }> {
  const mode = options.mode ?? 0o600;
  const folder = dirname(path);
  await mkdir(folder, { recursive: true, mode: options.folderMode ?? 0o700 });
  const temporary = join(folder, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(temporary, "wx", mode);
  try {
    await handle.writeFile(data);
    await handle.chmod(mode); // the umask may have narrowed it; say exactly what was asked
    if (options.durable !== false) await handle.sync();
  } finally {
    await handle.close();
  }
  return { folder, temporary };
}

/** fsync a folder, so a rename in it survives a power cut. */
export async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, "r");
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a folder; the rename is still atomic.
  } finally {
    await handle.close();
  }
}

/**
 * Appends to a file (a journal) so that what was appended survives a power cut: the file is
 * fsynced, and its folder too when the append made it. A crash mid-append can leave a last line
 * cut short; a reader of the journal skips it.
 */
export async function appendDurably(
  path: string,
  data: string | Uint8Array,
  options: Pick<AtomicWriteOptions, "mode" | "folderMode"> = {},
): Promise<void> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true, mode: options.folderMode ?? 0o700 });
  const handle = await open(path, "a", options.mode ?? 0o600);
  let made = false;
  try {
    made = (await handle.stat()).size === 0;
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (made) await syncFolder(folder);
}
