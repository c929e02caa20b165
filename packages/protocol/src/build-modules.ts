/**
 * Build modules (decision 0160): the builder hands each bundle of a language to the build module
 * of that language over the bus. A build module says its language in `mesh-build-modules` when it
 * starts, and answers `mesh.build.<language>` asks: the source archive's digest in, the built
 * archives' digests and the build log out.
 */
import { z } from "zod";
import { BuildId, Digest } from "./manifest.js";
import { LANGUAGE_PATTERN, NAME_PATTERN } from "./names.js";
import { BuiltBundle, Instant } from "./values.js";

export const LanguageName = z.string().regex(LANGUAGE_PATTERN, {
  error:
    'a language is a lowercase letter, then lowercase letters or digits, at most 31 (e.g. "python")',
});

/** `mesh-build-modules.<language>`: who builds the language, said by the build module at its start. */
export const BuildModuleRegistration = z
  .object({
    language: LanguageName,
    /** `mesh-build-<language>`: the name conditions and refusals give it. */
    module: z.string().regex(NAME_PATTERN),
    /** The mesh version it was built with. */
    version: z.string().min(1).max(100),
    /** What it needs on the machine it builds on, in words (`python3`, `go 1.19`). */
    toolchain: z.string().max(500),
    started: Instant,
  })
  .strict();
export type BuildModuleRegistration = z.infer<typeof BuildModuleRegistration>;

/**
 * An ask on `mesh.build.<language>`: build the bundles of that language in the source archive
 * stored in `mesh-artifacts` under `source`. The build module reads the manifest from the source
 * itself (the builder checked it before asking).
 */
export const BuildAsk = z
  .object({
    module: z.string().regex(NAME_PATTERN),
    build: BuildId,
    language: LanguageName,
    /** The source archive's SHA-256 in `mesh-artifacts`. */
    source: Digest,
    /** The bundles of the manifest in this language, by name, in the manifest's order. */
    bundles: z.array(z.string().regex(NAME_PATTERN)).min(1),
  })
  .strict();
export type BuildAsk = z.infer<typeof BuildAsk>;

/** The answer: each bundle's archive stored in `mesh-artifacts`, or why the build failed. */
export const BuildAnswer = z.discriminatedUnion("ok", [
  z
    .object({
      ok: z.literal(true),
      bundles: z.array(
        BuiltBundle.extend({
          /** How a process of this bundle runs when its manifest gives no run (python, go). */
          run: z.array(z.string().min(1)).min(1).optional(),
        }),
      ),
      log: z.string(),
    })
    .strict(),
  z.object({ ok: z.literal(false), error: z.string().min(1), log: z.string() }).strict(),
]);
export type BuildAnswer = z.infer<typeof BuildAnswer>;

/** How long the builder waits for one build ask's answer (a type check, a Go build). */
export const BUILD_ASK_TIMEOUT_MS = 10 * 60_000;
