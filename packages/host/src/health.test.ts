import { test } from "node:test";
import assert from "node:assert/strict";
import {
  crashLoop,
  moduleHealth,
  runtimeUnreachable,
  type ProcessFacts,
  type Reason,
  type ToolsFacts,
} from "./health.js";
import { ErrorCode } from "@mesh/protocol";

const rules = { healthyMs: 10_000, failingExits: 3, windowMs: 60_000, unreachableMs: 10_000 };
const NOW = 1_000_000;
const up = (ranMs: number): ProcessFacts => ({
  running: true,
  since: NOW - ranMs,
  exits: [],
  lastError: undefined,
});
const crashed = (exits: number, ranMs?: number): ProcessFacts => ({
  running: ranMs !== undefined,
  since: ranMs === undefined ? undefined : NOW - ranMs,
  exits: Array.from({ length: exits }, (_, i) => NOW - 1_000 * (i + 1)),
  lastError: "p exited with code 1",
});

const badDigest: Reason = { code: ErrorCode.DIGEST_MISMATCH, message: "bad digest" };
const table: Array<[string, Reason | undefined, ProcessFacts[], string]> = [
  ["no process, applied", undefined, [], "healthy"],
  ["a failed apply", badDigest, [up(60_000)], "failing"],
  ["just started", undefined, [up(100)], "starting"],
  ["ran the healthy time", undefined, [up(10_000)], "healthy"],
  ["one of two not yet", undefined, [up(20_000), up(50)], "starting"],
  ["two exits in the window", undefined, [crashed(2)], "starting"],
  ["three exits in the window", undefined, [crashed(3)], "failing"],
  ["three exits, then a healthy run", undefined, [crashed(3, 15_000)], "healthy"],
  ["three exits long ago", undefined, [{ ...crashed(0, 100), exits: [1, 2, 3] }], "starting"],
  // Issue 14: a backoff grown past the window spaces the exits out; in a row they still count.
  [
    "three exits in a row, spaced past the window",
    undefined,
    [{ ...crashed(0), exits: [NOW - 500_000, NOW - 250_000, NOW - 1_000], exitsInARow: 9 }],
    "failing",
  ],
  [
    "three exits in a row, then a healthy run",
    undefined,
    [{ ...crashed(3, 15_000), exitsInARow: 3 }],
    "healthy",
  ],
];

for (const [what, applyError, processes, health] of table) {
  test(`health: ${what} → ${health}`, () => {
    const result = moduleHealth({ applyError, processes, now: NOW, rules });
    assert.equal(result.health, health);
    // Why it fails is a code (the apply's own, or an exit's), not only words.
    if (health === "failing")
      assert.equal(result.lastError?.code, applyError?.code ?? ErrorCode.PROCESS_EXITED);
  });
}

// A crash loop is said whatever the health, until a run lasts the healthy time (issue 14).
const loopTable: Array<[string, ProcessFacts[], { inARow: number; last: number } | undefined]> = [
  ["never exited", [up(100)], undefined],
  [
    "exited once, restarting",
    [{ ...crashed(1), exitsInARow: 1 }],
    { inARow: 1, last: NOW - 1_000 },
  ],
  [
    "two processes, the one looping counts",
    [up(60_000), { ...crashed(2, 200), exitsInARow: 2 }],
    { inARow: 2, last: NOW - 1_000 },
  ],
  ["looped, now ran healthy", [{ ...crashed(3, 15_000), exitsInARow: 3 }], undefined],
];
for (const [what, processes, expected] of loopTable) {
  test(`crash loop: ${what}`, () => {
    assert.deepEqual(crashLoop(processes, NOW, rules), expected);
    const health = moduleHealth({ applyError: undefined, processes, now: NOW, rules });
    assert.deepEqual(health.exits, expected);
  });
}

test("a module waiting for a secret is no crash loop", () => {
  const health = moduleHealth({
    applyError: undefined,
    waitingFor: { what: "waiting for secret `token`" },
    processes: [{ ...crashed(2), exitsInARow: 2 }],
    now: NOW,
    rules,
  });
  assert.equal(health.health, "starting");
  assert.equal(health.exits, undefined);
});

// A module whose tools the runtime serves here: healthy once they load.
const toolsTable: Array<[string, ToolsFacts | undefined, ProcessFacts[], string]> = [
  ["tools not reported yet", undefined, [], "starting"],
  ["tools loading", { state: "starting" }, [], "starting"],
  ["tools serving", { state: "serving" }, [], "healthy"],
  ["tools idle (loaded, its worker stopped until the next call)", { state: "idle" }, [], "healthy"],
  ["tools failing to load", { state: "failing", error: "it failed to load: boom" }, [], "failing"],
  ["tools serving, its process still young", { state: "serving" }, [up(100)], "starting"],
  ["tools serving, its process crash-looping", { state: "serving" }, [crashed(3)], "failing"],
  ["tools loading, its process crash-looping", { state: "starting" }, [crashed(3)], "failing"],
];

for (const [what, tools, processes, health] of toolsTable) {
  test(`health of a tools module: ${what} → ${health}`, () => {
    const result = moduleHealth({ applyError: undefined, processes, now: NOW, rules, tools });
    assert.equal(result.health, health);
    if (health === "failing")
      assert.ok(
        result.lastError?.code === ErrorCode.TOOLS_FAILED ||
          result.lastError?.code === ErrorCode.PROCESS_EXITED,
      );
  });
}

test("a failed apply is failing whatever the runtime says of the tools", () => {
  const result = moduleHealth({
    applyError: badDigest,
    processes: [],
    now: NOW,
    rules,
    tools: { state: "serving" },
  });
  assert.equal(result.health, "failing");
  assert.deepEqual(result.lastError, badDigest);
});

// The runtime's reach of the bus (issue 15: a process that cannot reach the bus is not healthy).
const reachTable: Array<
  [string, { connected: boolean; since: string } | undefined, boolean, boolean]
> = [
  ["a runtime before the field", undefined, true, false],
  ["connected", { connected: true, since: new Date(NOW - 60_000).toISOString() }, true, false],
  ["away 5 s", { connected: false, since: new Date(NOW - 5_000).toISOString() }, true, false],
  ["away 11 s", { connected: false, since: new Date(NOW - 11_000).toISOString() }, true, true],
  [
    "away 11 s, the host away too",
    { connected: false, since: new Date(NOW - 11_000).toISOString() },
    false,
    false,
  ],
];
for (const [what, bus, hostConnected, failing] of reachTable) {
  test(`runtime reach: ${what} → ${failing ? "failing" : "not failing"}`, () => {
    const why = runtimeUnreachable({ bus, hostConnected, now: NOW, rules });
    assert.equal(why !== undefined, failing);
    if (why !== undefined && bus !== undefined) {
      assert.match(why, /^node-tools cannot reach the bus since /);
      assert.ok(why.includes(bus.since));
    }
  });
}
