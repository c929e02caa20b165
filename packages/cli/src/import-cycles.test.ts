/**
 * No import cycle between files, in any package (issue 21 item 4). Packages already depend one
 * way (project references refuse a cycle between them); within a package a cycle between files
 * builds and runs, and is how a shared type ends up in the file of one of its users. This reads
 * every source file's imports (type-only imports and re-exports included: they tie files as much)
 * as TypeScript's own pre-processor sees them, and names each cycle's files.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));

/** Every .ts file under each package's src, and the files of its package each one imports. */
async function importGraph(): Promise<Map<string, string[]>> {
  const files: string[] = [];
  for (const pkg of await readdir(PACKAGES)) {
    const src = join(PACKAGES, pkg, "src");
    if (!existsSync(src)) continue;
    for (const entry of await readdir(src, { recursive: true }))
      if (entry.endsWith(".ts") && !entry.endsWith(".d.ts")) files.push(join(src, entry));
  }
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(await readFile(file, "utf8"), true, true);
    const to = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith("."))
      .map((name) => resolve(dirname(file), name).replace(/\.js$/, ".ts"))
      .map((path) => (known.has(path) ? path : join(path, "index.ts")))
      .filter((path) => known.has(path));
    graph.set(file, [...new Set(to)]);
  }
  return graph;
}

/** The strongly connected components of more than one file, or of a file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      component.push(w);
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test("cycles are found: a → b → c → a and a file importing itself, not a → b alone", () => {
  const graph = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["a"]],
    ["d", ["d"]],
    ["e", ["a"]],
  ]);
  assert.deepEqual(cycles(graph).sort(), [["a", "b", "c"], ["d"]]);
  assert.deepEqual(
    cycles(
      new Map([
        ["a", ["b"]],
        ["b", []],
      ]),
    ),
    [],
  );
});

test("no import cycle between the files of any package", async () => {
  const graph = await importGraph();
  assert.ok(graph.size > 300, `only ${graph.size} source files read`);
  const named = cycles(graph).map((c) => c.map((f) => relative(PACKAGES, f)).join(" ↔ "));
  assert.deepEqual(named, [], "move what the files share down into a file of its own");
});
