/** The language builders the mesh ships, each run as a build module of its own (decision 0160). */
import type { LanguageBuilder } from "./language-builder.js";
import { goBuilder } from "./go.js";
import { pythonBuilder } from "./python.js";
import { typescriptBuilder } from "./typescript.js";

export const SHIPPED_BUILDERS: Readonly<Record<string, LanguageBuilder>> = {
  typescript: typescriptBuilder,
  python: pythonBuilder,
  go: goBuilder,
};

/** The languages the mesh ships a build module for, sorted. */
export const SHIPPED_LANGUAGES: readonly string[] = Object.keys(SHIPPED_BUILDERS).sort();

export function shippedBuilder(language: string): LanguageBuilder | undefined {
  return Object.hasOwn(SHIPPED_BUILDERS, language) ? SHIPPED_BUILDERS[language] : undefined;
}
