/** For the build modules' tests: the entries of a packed archive (ustar in gzip), by path. */
import { gunzipSync } from "node:zlib";

/** Each entry's path (prefix joined) and mode. */
export function archiveEntries(gz: Uint8Array): Map<string, number> {
  const tar = gunzipSync(gz);
  const out = new Map<string, number>();
  const text = (from: number, to: number): string =>
    tar.subarray(from, to).toString("utf8").replace(/\0.*$/s, "");
  for (let at = 0; at + 512 <= tar.length;) {
    const name = text(at, at + 100);
    if (name === "") break;
    const prefix = text(at + 345, at + 500);
    const size = parseInt(tar.subarray(at + 124, at + 136).toString("ascii"), 8);
    out.set(
      prefix === "" ? name : `${prefix}/${name}`,
      parseInt(tar.subarray(at + 100, at + 108).toString("ascii"), 8),
    );
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
