/**
 * Helpers for this package's tests only (never exported from the package): where the fixtures
 * are, building manifests, and golden files. Tests may touch the disk; the package's code may not.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Manifest, ManifestInput } from "@mesh/protocol";
import { checkManifest } from "./manifest-check.js";
import { formatProblem } from "./manifest-problem.js";

/** A file under packages/core/test-fixtures. */
export const fixture = (...parts: string[]): string =>
  fileURLToPath(new URL(`../test-fixtures/${parts.join("/")}`, import.meta.url));

/** A file of the repository (from packages/core/dist). */
export const repoFile = (...parts: string[]): string =>
  fileURLToPath(new URL(`../../../${parts.join("/")}`, import.meta.url));

/** Whether golden files are to be written rather than compared (`UPDATE_GOLDEN=1`). */
export const updatingGolden = process.env.UPDATE_GOLDEN === "1";

/** A manifest that must pass the check; the test fails with its problems otherwise. */
export function manifest(input: ManifestInput): Manifest {
  const checked = checkManifest(input);
  if (!checked.ok)
    assert.fail(`fixture manifest refused:\n${checked.problems.map(formatProblem).join("\n")}`);
  return checked.manifest;
}

/** A 64-hex digest made of one repeated character, for readable fixtures. */
export const digest = (c: string): string => c.repeat(64);

/**
 * Compares `value` with the JSON golden file at `path`, or (with UPDATE_GOLDEN=1) writes it,
 * formatted as the repository's formatter would, so `prettier --check` stays clean. Goldens are
 * reviewed by a person before they are committed: an update is not a pass.
 */
export async function matchesGolden(path: string, value: unknown): Promise<void> {
  if (updatingGolden) {
    const prettier = await import("prettier");
    const options = (await prettier.resolveConfig(path)) ?? {};
    writeFileSync(
      path,
      await prettier.format(JSON.stringify(value), { ...options, filepath: path }),
    );
    return;
  }
  assert.ok(
    existsSync(path),
    `golden file ${path} is missing; run the tests with UPDATE_GOLDEN=1 and review it`,
  );
  const golden = JSON.parse(readFileSync(path, "utf8")) as unknown;
  assert.deepStrictEqual(
    JSON.parse(JSON.stringify(value)),
    golden,
    `${path} differs; if the change is intended, run with UPDATE_GOLDEN=1 and review the diff`,
  );
}
