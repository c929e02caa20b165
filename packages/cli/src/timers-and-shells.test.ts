/**
 * Waits and process shells go through the kit (issue 21): daemon code does not call `setTimeout`
 * or `setInterval` itself (it waits through `delay` or `within`, puts a deadline on an operation
 * through `withDeadline`, retries through `retry`, schedules keys on a `WorkQueue`), and a
 * daemon's process stops on signals through `runProcess`, not a signal runner of its own. The
 * files were converted one by one and the lists below are now empty: a file that calls a timer or
 * a signal runner fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));

/** The daemon code: the process packages and the bus they are built on. */
const DAEMON_PACKAGES = ["bus", "controller", "delivery", "host", "runtime"];

/** Timer calls not yet converted to the kit, by file. */
const TIMERS_LEFT: Readonly<Record<string, number>> = {};

/** Processes that still stop on signals through a runner of their own instead of `runProcess`. */
const SHELLS_LEFT: Readonly<Record<string, number>> = {};

/** A timer call, or an import of Node's timers (whose promise `setTimeout` is a wait by another name). */
const TIMER = /\b(?:setTimeout|setInterval)\(|from "node:timers(?:\/promises)?"/g;
/** A signal runner, or a process handling a stop signal itself. */
const SIGNAL_RUNNER =
  /\b(?:runUntilSignal|stopOnSignals)\(|\bprocess\.(?:on|once)\("SIG(?:INT|TERM|HUP)"/g;

/** Counts of `pattern` per production file (no tests, no test kits) of the daemon packages. */
async function countsOf(pattern: RegExp): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const pkg of DAEMON_PACKAGES) {
    const src = join(PACKAGES, pkg, "src");
    if (!existsSync(src)) continue;
    for (const entry of await readdir(src, { recursive: true })) {
      if (!entry.endsWith(".ts") || entry.endsWith(".d.ts") || entry.endsWith(".test.ts")) continue;
      if (/(^|\/)(testing|test-support)(\/|$)|test-support\.ts$/.test(entry)) continue;
      const text = await readFile(join(src, entry), "utf8");
      const n = [...text.replace(/^\s*(\/\/|\*).*$/gm, "").matchAll(pattern)].length;
      if (n > 0) counts[relative(PACKAGES, join(src, entry))] = n;
    }
  }
  return counts;
}

test("no daemon code calls setTimeout or setInterval but the files not yet converted to the kit", async () => {
  assert.deepEqual(await countsOf(TIMER), TIMERS_LEFT);
});

test("every daemon process stops on signals through the kit's runProcess but those not yet converted", async () => {
  assert.deepEqual(await countsOf(SIGNAL_RUNNER), SHELLS_LEFT);
});

test("the counting sees a timer and a signal runner, and not one in a comment", () => {
  const code = "const t = setTimeout(f, 1);\n// setInterval(g, 2)\nrunUntilSignal(o, b);";
  const strip = code.replace(/^\s*(\/\/|\*).*$/gm, "");
  assert.equal([...strip.matchAll(TIMER)].length, 1);
  assert.equal([...strip.matchAll(SIGNAL_RUNNER)].length, 1);
});

test("the counting sees a renamed promise timer and a stop signal handled by hand, not SIGUSR2", () => {
  const code = [
    'import { setTimeout as sleep } from "node:timers/promises";',
    'process.once("SIGTERM", stop);',
    'process.on("SIGUSR2", serve);',
  ].join("\n");
  assert.equal([...code.matchAll(TIMER)].length, 1);
  assert.equal([...code.matchAll(SIGNAL_RUNNER)].length, 1);
});
