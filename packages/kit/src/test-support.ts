/**
 * Helpers for this package's tests only (never exported from the package): what a piece of code
 * prints in a node process of its own, for what keeps a process alive.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";

/**
 * What `lines`, run as an ES module in a node process of its own, printed (trimmed); the process
 * must end, with status 0, within a minute.
 */
export function printedBy(lines: readonly string[]): string {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", lines.join("\n")], {
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(child.status, 0, child.stderr);
  return child.stdout.trim();
}
