/**
 * The languages the mesh ships a build module for (decision 0160), sorted. Apart from the
 * builders themselves (`builders.ts`), so what only needs the names (the builder daemon, the
 * registration's check) does not load the compilers the build modules run.
 */
const LANGUAGES = ["go", "python", "typescript"] as const;

export type ShippedLanguage = (typeof LANGUAGES)[number];

export const SHIPPED_LANGUAGES: readonly string[] = LANGUAGES;
