/**
 * Reproducible archives: the same files give the same bytes, wherever and whenever they are
 * packed. A ustar archive written here, not by a library, so every byte is decided: entries
 * sorted by path, directories before what they hold, one fixed mtime, uid and gid 0, no owner
 * names, modes 0755 (directories and files marked executable, such as a Go binary) and 0644 (other
 * files), then gzip with its header's time and OS
 * fields fixed. See docs/decisions/0031-reproducible-archives.md.
 */
import { gzipSync } from "node:zlib";
import { ErrorCode, MeshError } from "@mesh/protocol";

/** 2000-01-01T00:00:00Z: fixed, and late enough that no extractor calls it implausible. */
export const ARCHIVE_MTIME = 946_684_800;

export interface ArchiveFile {
  /** Relative, `/`-separated, no `.` or `..` parts. */
  readonly path: string;
  readonly bytes: Uint8Array;
  /** Packed 0755 instead of 0644: a program the process runs directly. */
  readonly executable?: boolean;
}

/** Packs files as a reproducible tar.gz. */
export function packArchive(files: readonly ArchiveFile[]): Uint8Array {
  const dirs = new Set<string>();
  for (const f of files) {
    if (
      f.path === "" ||
      f.path.startsWith("/") ||
      f.path.split("/").some((p) => p === "" || p === "." || p === "..")
    ) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `the archive path ${JSON.stringify(f.path)} is not a relative path inside the bundle; the builder names files inside its output folder only`,
        { path: f.path },
      );
    }
    const parts = f.path.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(`${parts.slice(0, i).join("/")}/`);
  }
  const entries: { path: string; bytes?: Uint8Array; executable?: boolean }[] = [
    ...[...dirs].map((path) => ({ path })),
    ...files.map((f) => ({ path: f.path, bytes: f.bytes, executable: f.executable === true })),
  ];
  // Code-unit order, so every machine and locale sorts the same; "a/" sorts before "a/b".
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const blocks: Uint8Array[] = [];
  for (const entry of entries) {
    const size = entry.bytes?.byteLength ?? 0;
    blocks.push(
      header(entry.path, entry.bytes === undefined ? "5" : "0", size, entry.executable === true),
    );
    if (entry.bytes !== undefined && size > 0) {
      blocks.push(entry.bytes);
      const pad = (512 - (size % 512)) % 512;
      if (pad > 0) blocks.push(new Uint8Array(pad));
    }
  }
  blocks.push(new Uint8Array(1024)); // two empty blocks end the archive
  const gz = gzipSync(Buffer.concat(blocks), { level: 9 });
  // The gzip header: bytes 4-7 are a time (zlib writes 0) and byte 9 the OS, which depends on
  // the platform zlib was built for; fixed to "unknown" so every platform writes the same bytes.
  gz[9] = 0xff;
  return new Uint8Array(gz.buffer, gz.byteOffset, gz.byteLength);
}

function header(path: string, type: "0" | "5", size: number, executable: boolean): Uint8Array {
  const block = Buffer.alloc(512);
  let name = path;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    // ustar splits a long path at a `/`: up to 155 bytes of prefix, up to 100 of name.
    const cut = path.lastIndexOf("/", path.length - 2);
    prefix = path.slice(0, cut);
    name = path.slice(cut + 1);
    if (cut <= 0 || Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `the archive path ${JSON.stringify(path)} is too long for an archive entry (at most 155 + 100 bytes split at a /); shorten the bundle's folder names`,
        { path },
      );
    }
  }
  block.write(name, 0, 100, "utf8");
  octal(block, 100, 8, type === "5" || executable ? 0o755 : 0o644);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, size);
  octal(block, 136, 12, ARCHIVE_MTIME);
  block.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  block.write(type, 156, 1, "ascii");
  block.write("ustar\u000000", 257, 8, "binary");
  block.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, 8, "ascii");
  return block;
}

function octal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, "0")}\u0000`, offset, length, "ascii");
}
