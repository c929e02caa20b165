/**
 * How a bundle is run: the interpreter of its language, and the file the builder makes of each
 * entrypoint. The builder and the composer both follow these, so what a process runs is the file
 * the archive holds.
 */

/** The program that runs a bundle of each language the mesh can run, with the entrypoint after it. */
const INTERPRETERS: Readonly<Record<string, string>> = { typescript: "node" };

/** The languages the mesh can run a bundle of (a prebuilt bundle says its own `run`). */
export const RUNNABLE_LANGUAGES: readonly string[] = Object.keys(INTERPRETERS);

/** The interpreter for `language`, or undefined when the mesh knows none. */
export function interpreterFor(language: string): string | undefined {
  return Object.hasOwn(INTERPRETERS, language) ? INTERPRETERS[language] : undefined;
}

/**
 * The endings a typescript entrypoint may have; each is built to the same path ending in `.js`.
 * Longest first, so `.mts` is not read as `.ts`.
 */
export const TYPESCRIPT_ENTRY_EXTENSIONS: readonly string[] = [
  ".mts",
  ".tsx",
  ".mjs",
  ".jsx",
  ".ts",
  ".js",
];

/**
 * The file an entrypoint becomes in the built bundle. The builder bundles each typescript
 * entrypoint with esbuild into one ES module at the same relative path with its ending replaced by
 * `.js` (`src/main.ts` → `src/main.js`), so the path a manifest author wrote still finds it; a
 * prebuilt bundle is taken as it is.
 */
export function builtEntrypoint(language: string, entry: string): string {
  if (language !== "typescript") return entry;
  const ending = TYPESCRIPT_ENTRY_EXTENSIONS.find(
    (e) => entry.endsWith(e) && entry.length > e.length,
  );
  return ending === undefined ? entry : `${entry.slice(0, -ending.length)}.js`;
}
