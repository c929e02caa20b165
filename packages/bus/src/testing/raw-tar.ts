/**
 * Hand-made tar.gz archives for tests: headers written byte by byte, so an archive can hold what
 * no well-behaved packer writes (devices, FIFOs, `..` and absolute names, links out, set-id bits,
 * sizes that claim gigabytes).
 */
import { gzipSync } from "node:zlib";

/** One hand-made tar entry. */
export interface RawEntry {
  readonly name: string;
  /** ustar type flag: 0 file, 1 hard link, 2 symlink, 3 char device, 4 block device, 5 dir, 6 fifo. */
  readonly type: "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7";
  readonly data?: string | Uint8Array;
  /** The size the header claims; the data is that many zero bytes (which gzip shrinks to little). */
  readonly size?: number;
  readonly linkname?: string;
  readonly mode?: number;
}

/** A tar of hand-made headers, not compressed. */
export function rawTarStream(entries: readonly RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = typeof e.data === "string" ? Buffer.from(e.data) : Buffer.from(e.data ?? []);
    const size = e.size ?? data.length;
    const header = Buffer.alloc(512, 0);
    const put = (text: string, offset: number, length: number): void => {
      header.write(text.slice(0, length), offset, length, "latin1");
    };
    const octal = (n: number, length: number): string =>
      `${n.toString(8).padStart(length - 1, "0")}\0`;
    put(e.name, 0, 100);
    put(octal(e.mode ?? 0o644, 8), 100, 8);
    put(octal(0, 8), 108, 8);
    put(octal(0, 8), 116, 8);
    put(octal(size, 12), 124, 12);
    put(octal(0, 12), 136, 12);
    put("        ", 148, 8);
    put(e.type, 156, 1);
    put(e.linkname ?? "", 157, 100);
    put("ustar\0", 257, 6);
    put("00", 263, 2);
    let sum = 0;
    for (const byte of header) sum += byte;
    put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
    blocks.push(header);
    if (e.type === "0" || e.type === "7") {
      const body = e.size === undefined ? data : Buffer.alloc(size, 0);
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512, 0));
    }
  }
  blocks.push(Buffer.alloc(1024, 0));
  return Buffer.concat(blocks);
}

/** A gzipped tar of hand-made headers. */
export function rawTar(entries: readonly RawEntry[]): Uint8Array {
  return gzipSync(rawTarStream(entries));
}
