/** The language builders the mesh ships, each run as a build module of its own (decision 0160). */
import type { LanguageBuilder } from "./language-builder.js";
import { goBuilder } from "./go.js";
import { pythonBuilder } from "./python.js";
import { typescriptBuilder } from "./typescript.js";
import { SHIPPED_LANGUAGES, type ShippedLanguage } from "./languages.js";

export { SHIPPED_LANGUAGES };

/** One builder per shipped language: the type holds the two lists equal. */
export const SHIPPED_BUILDERS: Readonly<Record<ShippedLanguage, LanguageBuilder>> = {
  typescript: typescriptBuilder,
  python: pythonBuilder,
  go: goBuilder,
};

export function shippedBuilder(language: string): LanguageBuilder | undefined {
  return Object.hasOwn(SHIPPED_BUILDERS, language)
    ? SHIPPED_BUILDERS[language as ShippedLanguage]
    : undefined;
}
