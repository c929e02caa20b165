/** Listing a built or unpacked folder, the same way for every language's output. */
import { readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/** Every file under `dir`, relative, `/`-separated, sorted. */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join("/"))
    .sort();
}
