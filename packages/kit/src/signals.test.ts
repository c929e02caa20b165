import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import { runUntilSignal, signalExitCode, stopOnSignals, type SignalSource } from "./signals.js";

/** A stand-in for `process`: signals are emitted by the test, exits recorded. */
function fakeProcess(): { source: SignalSource & EventEmitter; exits: number[]; lines: string[] } {
  return { source: new EventEmitter(), exits: [], lines: [] };
}

describe("stopOnSignals", () => {
  test("the first signal aborts, a second one exits at once with the shell's code", () => {
    const p = fakeProcess();
    using stop = stopOnSignals({
      name: "d",
      source: p.source,
      exit: (code) => p.exits.push(code),
      log: (l) => p.lines.push(l),
    });
    assert.equal(stop.signal.aborted, false);
    p.source.emit("SIGTERM", "SIGTERM");
    assert.equal(stop.signal.aborted, true);
    assert.deepEqual(p.exits, []);
    p.source.emit("SIGINT", "SIGINT");
    assert.deepEqual(p.exits, [130]);
    assert.deepEqual(p.lines, ["SIGTERM: stopping", "SIGINT again: exiting without waiting"]);
  });

  test("a stop that outlasts its grace exits with 1", async () => {
    const p = fakeProcess();
    using stop = stopOnSignals({
      name: "d",
      graceMs: 20,
      source: p.source,
      exit: (code) => p.exits.push(code),
      log: (l) => p.lines.push(l),
    });
    p.source.emit("SIGINT", "SIGINT");
    assert.equal(stop.signal.aborted, true);
    const deadline = Date.now() + 60_000;
    while (p.exits.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(p.exits, [1]);
  });

  test("once disposed it no longer listens, and its grace timer is gone", async () => {
    const p = fakeProcess();
    const result = await runUntilSignal(
      {
        name: "d",
        graceMs: 10,
        source: p.source,
        exit: (code) => p.exits.push(code),
        log: () => undefined,
      },
      async (signal) => {
        p.source.emit("SIGTERM", "SIGTERM");
        return Promise.resolve(signal.aborted ? "stopped" : "running");
      },
    );
    assert.equal(result, "stopped");
    assert.equal(p.source.listenerCount("SIGTERM"), 0);
    assert.equal(p.source.listenerCount("SIGINT"), 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(p.exits, [], "the grace timer was cleared");
  });

  test("a stop's doing and grace given as functions are asked when the first signal comes", async () => {
    const p = fakeProcess();
    let phase = { doing: "leaving", graceMs: 600_000 };
    using stop = stopOnSignals({
      name: "d",
      doing: () => phase.doing,
      graceMs: () => phase.graceMs,
      source: p.source,
      exit: (code) => p.exits.push(code),
      log: (l) => p.lines.push(l),
    });
    // What the process does changes before the signal: what it says and how long it may take.
    phase = { doing: "draining, then stopping", graceMs: 20 };
    p.source.emit("SIGTERM", "SIGTERM");
    assert.equal(stop.signal.aborted, true);
    const deadline = Date.now() + 60_000;
    while (p.exits.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(p.exits, [1], "the grace asked at the signal (20 ms), not at the start");
    assert.deepEqual(p.lines, [
      "SIGTERM: draining, then stopping",
      "did not stop within 20 ms; exiting",
    ]);
  });

  test("exit codes are 128 plus the signal's number", () => {
    assert.equal(signalExitCode("SIGINT"), 130);
    assert.equal(signalExitCode("SIGTERM"), 143);
  });
});
