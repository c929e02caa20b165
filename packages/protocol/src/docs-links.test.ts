/**
 * The docs stand on their own: no file under docs/ and no README links or points outside the
 * repository (a reader has nothing beside it), and every relative link lands on a file that
 * exists. Web addresses are allowed; they are not part of the repository's own documentation.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

/** This file runs from packages/protocol/dist/; the repository root is three folders up. */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Every docs/**\/*.md and every README.md of the repository (not in node_modules or dist). */
function documents(): string[] {
  const out: string[] = [];
  const walk = (dir: string, underDocs: boolean): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "dist")
        continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, underDocs || relative(ROOT, path) === "docs");
      else if (entry.name.endsWith(".md") && (underDocs || entry.name === "README.md"))
        out.push(path);
    }
  };
  walk(ROOT, false);
  return out.sort();
}

/** `[text](target)` links and `<img src>`-free reference links `[x]: target`, with their line. */
function links(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  text.split("\n").forEach((line, index) => {
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ target: m[1] ?? "", line: index + 1 });
    const ref = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(line);
    if (ref !== null) out.push({ target: ref[1] ?? "", line: index + 1 });
  });
  return out;
}

/** Names of what lives beside the repository, never in it. */
const OUTSIDE = [/\.\.\/shared\b/, /\bshared\/(?:DESIGN|STYLE|notes|seeds)\b/, /\bDESIGN\.md\b/];

describe("the docs stand on their own", () => {
  const docs = documents();

  test("there are docs and READMEs to check (docs/design.md and docs/modules.md among them)", () => {
    const names = docs.map((d) => relative(ROOT, d).split(sep).join("/"));
    for (const must of ["README.md", "docs/design.md", "docs/modules.md", "docs/architecture.md"])
      assert.ok(names.includes(must), `${must} is missing`);
  });

  test("no file under docs/ or any README links outside the repository, and every link lands", () => {
    const problems: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(doc, "utf8");
      const name = relative(ROOT, doc);
      text.split("\n").forEach((line, index) => {
        for (const pattern of OUTSIDE)
          if (pattern.test(line))
            problems.push(
              `${name}:${index + 1} names ${pattern.source}, which is not in the repository`,
            );
      });
      for (const { target, line } of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue;
        const path = decodeURIComponent(target.replace(/#.*$/, ""));
        const at = path.startsWith("/") ? join(ROOT, path) : resolve(dirname(doc), path);
        const inside = relative(ROOT, at);
        if (inside.startsWith("..") || resolve(at) === resolve(ROOT, ".."))
          problems.push(`${name}:${line} links ${target}, outside the repository`);
        else if (!existsSync(at))
          problems.push(`${name}:${line} links ${target}, which does not exist`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test("no source cites a document the repository does not hold (notes/nats.md, DESIGN.md)", () => {
    const cited = [...OUTSIDE, /\bnotes\/nats\.md\b/, /\bnotes §/];
    const problems: string[] = [];
    // This file names them to look for them.
    const self = fileURLToPath(import.meta.url).replace(/[\\/]dist[\\/](.*)\.js$/, "/src/$1.ts");
    for (const file of sources().filter((f) => resolve(f) !== resolve(self))) {
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, index) => {
          for (const pattern of cited)
            if (pattern.test(line))
              problems.push(`${relative(ROOT, file)}:${index + 1} cites ${pattern.source}`);
        });
    }
    assert.deepEqual(problems, [], "cite docs/nats.md or docs/design.md instead");
  });
});

/** The repository's own code: packages/*\/src, bench/src and scripts (.ts, .js). */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js)$/.test(entry.name)) out.push(path);
    }
  };
  for (const pkg of readdirSync(join(ROOT, "packages"))) walk(join(ROOT, "packages", pkg, "src"));
  walk(join(ROOT, "bench", "src"));
  walk(join(ROOT, "scripts"));
  return out;
}
