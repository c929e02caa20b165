/**
 * What the builder and registration unpack (a module's source archive, a prebuilt bundle) is read
 * in full before anything of it is written, and held to the rules a node holds bundles to
 * (`ArchiveEntryCheck` in @mesh/core): an archive with a bad entry is refused naming every bad
 * entry, never unpacked with the bad ones left out. The reading itself is bounded: the
 * decompressed stream is counted and cut off past the limits, so a gzip bomb costs the limit, not
 * what it would expand to.
 */
import { createGunzip } from "node:zlib";
import { Parser, type ReadEntry } from "tar";
import { ArchiveEntryCheck, DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from "@mesh/core";
import { ErrorCode, MeshError } from "@mesh/protocol";

export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits };

/** At most this many bad entries are named in one refusal; the rest are counted. */
const NAMED_ENTRIES = 20;

/** Padding after an archive's end blocks that is still accepted (tar pads to 10 KiB records). */
const TRAILING_BYTES = 1024 * 1024;

/** Bytes fed to the reader at a time: a bomb's expansion is looked at in small steps. */
const CHUNK = 64 * 1024;

/**
 * Reads every entry of the `.tar.gz` in `bytes` and refuses the archive (ARCHIVE_REFUSED) when
 * an entry breaks a rule or a limit is passed. `what` names the archive in the message.
 */
export async function checkArchiveBytes(
  bytes: Uint8Array,
  options: { what: string; limits?: ArchiveLimits; path?: string },
): Promise<{ entries: number; bytes: number }> {
  const limits = options.limits ?? DEFAULT_ARCHIVE_LIMITS;
  const rules = new ArchiveEntryCheck(limits);
  const read = await readArchive(bytes, limits, rules);
  const { stopped, problems, gzipError, parseError } = read;
  const where = options.path === undefined ? {} : { path: options.path };
  const refuse = (why: string, cause?: unknown): MeshError =>
    new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${options.what} is refused: ${why}; nothing of it was unpacked — give an archive of plain files, folders and links inside it, within the limits`,
      { ...where, ...(cause === undefined ? {} : { cause }) },
    );
  if (stopped !== undefined) throw refuse(stopped);
  if (gzipError !== undefined)
    throw refuse(`it is not a gzip-compressed tar (${gzipError.message})`, gzipError);
  if (parseError !== undefined && problems.length === 0)
    throw refuse(`it is not a readable tar archive (${parseError.message})`, parseError);
  if (problems.length > 0) {
    const named = problems.slice(0, NAMED_ENTRIES).map((p) => `\n  - ${p}`);
    const more = problems.length - named.length;
    throw new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${options.what} is refused, and nothing of it was unpacked: ${problems.length} of its entries break the rules (an archive holds plain files, folders and links inside itself; no devices, FIFOs, hard links, set-id bits, absolute or climbing paths)${named.join("")}${more > 0 ? `\n  … and ${more} more` : ""}\nRepack it without those entries and add it again.`,
      where,
    );
  }
  if (rules.entries === 0) throw refuse("it holds no entries");
  return { entries: rules.entries, bytes: rules.bytes };
}

/** What reading an archive found: the entries that break a rule, or why the reading stopped. */
interface ArchiveReading {
  /** A limit passed: the reading stopped there. */
  readonly stopped: string | undefined;
  /** Each entry that breaks a rule, said. */
  readonly problems: readonly string[];
  readonly gzipError: Error | undefined;
  readonly parseError: Error | undefined;
}

/**
 * Feeds the bytes through gunzip and the tar reader in small steps, each entry held to `rules`,
 * counting what the stream expands to; stops as soon as a limit is passed.
 */
async function readArchive(
  bytes: Uint8Array,
  limits: ArchiveLimits,
  rules: ArchiveEntryCheck,
): Promise<ArchiveReading> {
  const problems: string[] = [];
  let stopped: string | undefined;
  // The tar stream is the files' bytes padded to 512, a 512-byte header per entry (two for long
  // names), and the end blocks: anything beyond that bound is not an archive within the limits.
  const streamLimit = limits.maxBytes + limits.maxEntries * 2048 + 1024 * 1024;
  let expanded = 0;
  let endAt: number | undefined;

  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      if (stopped === undefined) {
        const refusal = rules.check(entry);
        if (refusal?.kind === "limit") stopped = refusal.reason;
        else if (refusal !== undefined) problems.push(refusal.reason);
      }
      entry.resume();
    },
  });
  let parseError: Error | undefined;
  let gzipError: Error | undefined;
  const gunzip = createGunzip();
  await new Promise<void>((resolve) => {
    let settled = false;
    const finish = (): void => {
      if (settled) return;
      settled = true;
      if (!gunzip.destroyed) gunzip.destroy();
      resolve();
    };
    parser.on("error", (error: Error) => {
      parseError ??= error;
      finish();
    });
    parser.on("end", finish);
    // What follows the end blocks is never unpacked; more than a little of it is refused, so a
    // stream of zeros behind a tiny archive (a bomb) is not read to its end here or by tar.
    parser.on("eof", () => (endAt ??= expanded));
    gunzip.on("data", (chunk: Buffer) => {
      expanded += chunk.length;
      if (stopped === undefined && expanded > streamLimit)
        stopped = `it unpacks to more than ${limits.maxBytes} bytes (the limit)`;
      if (stopped === undefined && endAt !== undefined && expanded - endAt > TRAILING_BYTES)
        stopped = `it holds more than ${TRAILING_BYTES} bytes after the archive's end`;
      if (stopped !== undefined) finish();
      else parser.write(chunk);
    });
    gunzip.on("end", () => parser.end());
    gunzip.on("error", (error: Error) => {
      gzipError ??= error;
      finish();
    });
    void (async () => {
      for (let at = 0; at < bytes.byteLength && !settled; at += CHUNK) {
        const piece = bytes.subarray(at, Math.min(at + CHUNK, bytes.byteLength));
        if (!gunzip.write(piece)) await new Promise((r) => gunzip.once("drain", r));
      }
      if (!settled) gunzip.end();
    })();
  });
  return { stopped, problems, gzipError, parseError };
}
