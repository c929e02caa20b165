/**
 * A manifest's text (`mesh.yaml` or `mesh.json`) read and checked: syntax faults are problems
 * like any other, and every problem says the line and column it is on. Reading the file is the
 * caller's; this is text in, answer out.
 */
import {
  LineCounter,
  isMap,
  isScalar,
  isSeq,
  parseDocument,
  visit,
  type Node as YamlNode,
  type Pair,
  type YAMLMap,
} from "yaml";
import {
  MAX_MANIFEST_DEPTH,
  checkManifest,
  refused,
  type ManifestCheck,
} from "./manifest-check.js";
import { problem, type ManifestPath, type ManifestProblem } from "./manifest-problem.js";
import { readJson } from "./json-text.js";

export type ManifestFormat = "yaml" | "json";

/** The file names a module's source root may hold its manifest in, in the order they are looked for. */
export const MANIFEST_FILE_NAMES: readonly string[] = ["mesh.yaml", "mesh.yml", "mesh.json"];

/**
 * The largest manifest text read: 128 KiB, far beyond any real one (a few KiB), and a bound on
 * the work: a text this size is read and checked in well under a second.
 */
export const MAX_MANIFEST_TEXT = 128 * 1024;

/** The most lines a manifest may have: real ones have tens to hundreds. */
export const MAX_MANIFEST_LINES = 5_000;

/** The format a file name says, or undefined when it says none. */
export function manifestFormatOf(fileName: string): ManifestFormat | undefined {
  if (/\.ya?ml$/i.test(fileName)) return "yaml";
  if (/\.json$/i.test(fileName)) return "json";
  return undefined;
}

/**
 * Parses `text` as YAML 1.2 or JSON and checks the manifest it holds. Never throws. Problems
 * carry `line` and `column` (from 1) where the text has the place they name, and are in the
 * order of the text.
 */
export function parseManifestText(text: string, format: ManifestFormat): ManifestCheck {
  if (text.length > MAX_MANIFEST_TEXT) {
    return refused([
      problem(
        "too-large",
        [],
        { missing: true },
        `the manifest is ${text.length} characters long, more than the ${MAX_MANIFEST_TEXT} a manifest may have`,
        "keep data out of the manifest: ship it in a bundle, or as config defaults the module reads",
      ),
    ]);
  }
  const lines = countLines(text);
  if (lines > MAX_MANIFEST_LINES) {
    return refused([
      problem(
        "too-large",
        [],
        { missing: true },
        `the manifest has ${lines} lines, more than the ${MAX_MANIFEST_LINES} a manifest may have`,
        "keep data out of the manifest: ship it in a bundle, or as config defaults the module reads",
      ),
    ]);
  }
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  return format === "json" ? fromJson(body) : fromYaml(body);
}

function countLines(text: string): number {
  let lines = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines += 1;
  return lines;
}

function fromJson(text: string): ManifestCheck {
  const read = readJson(text, MAX_MANIFEST_DEPTH);
  const position = positions(text);
  const syntax: ManifestProblem[] = read.faults.map((fault) => {
    const where = position(fault.offset);
    const p =
      fault.kind === "duplicate-key"
        ? problem(
            "duplicate-key",
            fault.at ?? [],
            { missing: true },
            fault.message,
            "keep one of the two; JSON readers differ on which one wins",
          )
        : problem(
            fault.kind === "too-deep" ? "too-deep" : "syntax",
            [],
            { missing: true },
            `the text is not valid JSON: ${fault.message}`,
            fault.kind === "too-deep"
              ? "flatten the value; no field of a manifest needs that depth"
              : "correct the JSON at that place",
          );
    return { ...p, ...where };
  });
  if (read.value === undefined) return refused(syntax);
  const checked = checkManifest(read.value);
  if (checked.ok && syntax.length === 0) return checked;
  const located = (checked.ok ? [] : checked.problems).map((p) => {
    const spot = read.spot(p.at) ?? nearest(p.at, read.spot);
    const offset =
      spot === undefined
        ? undefined
        : p.code === "unknown-field"
          ? (spot.key ?? spot.value)
          : spot.value;
    return offset === undefined ? p : { ...p, ...position(offset) };
  });
  return inTextOrder([...syntax, ...located]);
}

function fromYaml(text: string): ManifestCheck {
  const lineCounter = new LineCounter();
  // logLevel error: faults and warnings are still collected (they are problems here), and the
  // reader prints nothing on the process; "silent" would stop collecting faults too.
  const doc = parseDocument(text, {
    lineCounter,
    prettyErrors: false,
    // The reader's own duplicate check compares each key with every other (quadratic: 100,000
    // keys took minutes); keys are checked below with a set per mapping instead.
    uniqueKeys: false,
    logLevel: "error",
  });
  const where = (offset: number): { line: number; column: number } => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  const syntax = [...readerProblems(doc, where), ...keyProblems(doc, where)];
  if (syntax.length > 0) return inTextOrder(syntax);

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return refused([
      problem(
        "too-deep",
        [],
        { missing: true },
        `the YAML expands too far: ${error instanceof Error ? error.message : String(error)}`,
        "write the values out instead of through many aliases",
      ),
    ]);
  }
  const checked = checkManifest(value ?? null);
  if (checked.ok) return checked;
  return inTextOrder(
    checked.problems.map((p) => {
      const offset = yamlOffset(doc.contents, p.at, p.code === "unknown-field");
      const located = offset === undefined ? p : { ...p, ...where(offset) };
      return p.code === "type" && typeof p.value === "number"
        ? quoteAsWritten(located, doc.getIn(p.at, true))
        : located;
    }),
  );
}

type YamlDocument = ReturnType<typeof parseDocument>;
type Where = (offset: number) => { line: number; column: number };

/** What the YAML reader itself found wrong: its errors and its warnings. */
function readerProblems(doc: YamlDocument, where: Where): ManifestProblem[] {
  const syntax: ManifestProblem[] = doc.errors.map((error) => {
    const duplicate = error.code === "DUPLICATE_KEY";
    const p = duplicate
      ? problem(
          "duplicate-key",
          [],
          { missing: true },
          "a key appears twice in one mapping",
          "keep one of the two",
        )
      : problem(
          "syntax",
          [],
          { missing: true },
          `the text is not valid YAML: ${yamlWords(error.code, error.message)}`,
          "correct the YAML at that place (indent with spaces, close every bracket and quote)",
        );
    return { ...p, ...where(error.pos[0]) };
  });
  for (const warning of doc.warnings) {
    syntax.push({
      ...problem(
        "syntax",
        [],
        { missing: true },
        `the YAML uses something a manifest does not: ${yamlWords(warning.code, warning.message)}`,
        "write plain YAML: no tags (!x) or directives",
      ),
      ...where(warning.pos[0]),
    });
  }
  return syntax;
}

/** Keys used twice in one mapping, and keys that are lists or mappings. */
function keyProblems(doc: YamlDocument, where: Where): ManifestProblem[] {
  const syntax: ManifestProblem[] = [];
  // A key that is a list or a mapping has no plain-object form; say so rather than letting it be
  // turned into text behind the author's back.
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        if (!seen.has(key)) {
          seen.add(key);
          continue;
        }
        syntax.push({
          ...problem(
            "duplicate-key",
            [],
            { missing: true },
            `the key ${JSON.stringify(key)} appears twice in one mapping`,
            "keep one of the two",
          ),
          ...where(pair.key.range?.[0] ?? 0),
        });
      }
    },
    Pair(_, pair) {
      if (pair.key !== null && !isScalar(pair.key)) {
        const offset = (pair.key as YamlNode).range?.[0] ?? 0;
        syntax.push({
          ...problem(
            "key-not-text",
            [],
            { missing: true },
            "a key is a list or a mapping",
            "write keys as plain text",
          ),
          ...where(offset),
        });
      }
    },
  });
  return syntax;
}

/**
 * A number where text is expected (a digest of digits only, a version like 1.10) is told back as
 * it was written, not as the number YAML read: quoting what the author wrote is the fix.
 */
function quoteAsWritten(p: ManifestProblem, node: unknown): ManifestProblem {
  if (!isScalar(node) || typeof node.source !== "string") return p;
  return {
    ...p,
    value: node.source,
    fix: `quote it, so YAML reads it as text: ${JSON.stringify(node.source)}`,
  };
}

/** The offset of the node at `at`, or of the deepest node on the way there. */
function yamlOffset(root: unknown, at: ManifestPath, wantKey: boolean): number | undefined {
  let here: unknown = root;
  let offset = startOf(root);
  for (let i = 0; i < at.length; i++) {
    const part = at[i];
    let next: unknown;
    let keyNode: unknown;
    if (isMap(here)) {
      const pair = pairsOf(here).get(String(part));
      next = pair?.value;
      keyNode = pair?.key;
    } else if (isSeq(here) && typeof part === "number") {
      next = here.items[part];
    }
    if (next === undefined && keyNode === undefined) return offset;
    const last = i === at.length - 1;
    offset =
      (last && wantKey ? startOf(keyNode) : undefined) ??
      startOf(next) ??
      startOf(keyNode) ??
      offset;
    here = next;
  }
  return offset;
}

/** A mapping's pairs by key, made once per mapping: locating n problems stays linear. */
const pairIndex = new WeakMap<YAMLMap, Map<string, Pair>>();
function pairsOf(map: YAMLMap): Map<string, Pair> {
  let index = pairIndex.get(map);
  if (index === undefined) {
    index = new Map();
    for (const item of map.items) {
      const key = isScalar(item.key) ? String(item.key.value) : undefined;
      if (key !== undefined && !index.has(key)) index.set(key, item);
    }
    pairIndex.set(map, index);
  }
  return index;
}

function startOf(node: unknown): number | undefined {
  if (typeof node !== "object" || node === null || !("range" in node)) return undefined;
  const range = (node as { range?: readonly number[] | null }).range;
  return range?.[0];
}

/** The spot of the deepest existing parent of `at`. */
function nearest(
  at: ManifestPath,
  spot: (at: ManifestPath) => { key?: number; value: number } | undefined,
): { key?: number; value: number } | undefined {
  for (let n = at.length - 1; n >= 0; n--) {
    const found = spot(at.slice(0, n));
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Offsets to lines and columns, from 1. */
function positions(text: string): (offset: number) => { line: number; column: number } {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 0x0a) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - (starts[low] ?? 0) + 1 };
  };
}

function inTextOrder(problems: readonly ManifestProblem[]): ManifestCheck {
  const result = refused(problems);
  if (result.ok) return result;
  const sorted = [...result.problems].sort(
    (a, b) => (a.line ?? Infinity) - (b.line ?? Infinity) || (a.column ?? 0) - (b.column ?? 0),
  );
  return { ...result, problems: sorted };
}

/** The YAML reader's fault, in the mesh's words where it has them. */
function yamlWords(code: string, message: string): string {
  switch (code) {
    case "TAB_AS_INDENT":
      return "a tab is used to indent; YAML indents with spaces only";
    case "MULTIPLE_DOCS":
      return "the text holds more than one YAML document (a --- line); a manifest is one";
    case "BAD_INDENT":
    case "MISSING_CHAR":
    case "UNEXPECTED_TOKEN":
    case "BLOCK_AS_IMPLICIT_KEY":
    case "MULTILINE_IMPLICIT_KEY":
    default:
      // The reader's own sentence is specific to the fault; it is kept, without its context lines.
      return message.split("\n")[0] ?? code;
  }
}
