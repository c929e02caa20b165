/** What the rules across a manifest's fields share: its bundles as read, and list helpers. */
import { problem, quote, type ManifestPath, type ManifestProblem } from "../manifest-problem.js";

/** A bundle as the rules read it: each field only when it has the type the schema wants. */
export interface Bundle {
  readonly index: number;
  readonly name: string | undefined;
  readonly language: unknown;
  readonly entrypoints: readonly unknown[] | undefined;
  readonly loads: readonly unknown[] | undefined;
  readonly raw: Record<string, unknown>;
}

/** The bundles of a manifest that are mappings, with their index in the list. */
export function readBundles(list: unknown): Bundle[] {
  return listOf(list)
    .map((raw, index): Bundle | undefined => {
      const b = record(raw);
      if (b === undefined) return undefined;
      return {
        index,
        name: typeof b.name === "string" ? b.name : undefined,
        language: b.language,
        entrypoints: Array.isArray(b.entrypoints) ? (b.entrypoints as unknown[]) : undefined,
        loads: Array.isArray(b.loads) ? (b.loads as unknown[]) : undefined,
        raw: b,
      };
    })
    .filter((b): b is Bundle => b !== undefined);
}

/** Names used more than once in a list of named entries: every later use is a problem. */
export function uniqueNames(
  field: "bundles" | "processes" | "states",
  list: readonly unknown[],
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const first = new Map<string, number>();
  list.forEach((raw, index) => {
    const name = record(raw)?.name;
    if (typeof name !== "string") return;
    const earlier = first.get(name);
    if (earlier === undefined) {
      first.set(name, index);
      return;
    }
    const kind = field === "bundles" ? "bundle" : field === "processes" ? "process" : "state";
    out.push(
      problem(
        "name-unique",
        [field, index, "name"],
        { value: name },
        `${quote(name)} is also the name of ${field}[${earlier}]`,
        `give this ${kind} a name of its own, e.g. ${quote(`${name}-2`)}, or merge the two`,
      ),
    );
  });
  return out;
}

/** Entries a list names twice: every later one is a problem. */
export function listDuplicates(at: ManifestPath, list: unknown): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const seen = new Set<string>();
  listOf(list).forEach((entry, index) => {
    if (typeof entry !== "string") return;
    if (seen.has(entry)) {
      out.push(
        problem(
          "no-duplicates",
          [...at, index],
          { value: entry },
          `${quote(entry)} is listed twice`,
          "list it once",
        ),
      );
    }
    seen.add(entry);
  });
  return out;
}

export function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export function listOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}
