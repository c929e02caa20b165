/**
 * Guesses for the "write instead" half of a refusal: the known word closest to a misspelt one,
 * and a valid name close to an invalid one.
 */
import { RESERVED_ENV_PREFIX, nameLike } from "@mesh/protocol";

/** The candidate closest to `word` by edit distance, when it is close enough to be a typo. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const lowered = word.toLowerCase().replace(/_/g, "-");
  for (const candidate of candidates) {
    const distance = editDistance(lowered, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  // Up to a third of the word may differ; beyond that a guess misleads more than it helps.
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(word.length / 3))
    ? best
    : undefined;
}

/** `a`, `"a" or "b"`, `"a", "b" or "c"`: candidates as a refusal lists them. */
export function oneOf(candidates: readonly string[]): string {
  const quoted = candidates.map((c) => JSON.stringify(c));
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

/** A "<module>/<name>" reference close to `value`. */
export function refLike(value: unknown, fallback: string): string {
  if (typeof value !== "string") return fallback;
  const [module, name] = value.split(/[/.:]/, 2);
  if (module === undefined || name === undefined) return fallback;
  return `${nameLike(module, fallback.split("/")[0] ?? "module")}/${nameLike(name, fallback.split("/")[1] ?? "name")}`;
}

/** The file name at the end of a path, or a stand-in. */
export function lastPart(value: unknown): string {
  const parts =
    typeof value === "string" ? value.split(/[\\/]/).filter((p) => p !== "" && p !== "..") : [];
  return parts[parts.length - 1] ?? "app.tar.gz";
}

/** A plain relative path close to `value`. */
export function relativeLike(value: unknown): string {
  if (typeof value !== "string") return "src/main.ts";
  const parts = value.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
  return parts.length > 0 ? parts.join("/") : "src/main.ts";
}

/** A valid map key (config key, secret name) close to `value`. */
export const keyLike = (value: unknown, fallback: string): string =>
  nameLike(value, fallback, { key: true });

/** A portable environment variable name close to `value`, not one the mesh reserves. */
export function envLike(value: unknown): string {
  if (typeof value !== "string") return "MY_SETTING";
  const guess = value.replace(/[^A-Za-z0-9_]+/g, "_").replace(/^[0-9]+/, "");
  return guess.length > 0 && !guess.startsWith(RESERVED_ENV_PREFIX) ? guess : "MY_SETTING";
}

/** Levenshtein distance, keeping two rows of the table. */
function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
