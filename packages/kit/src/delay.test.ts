import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { delay } from "./delay.js";

const listeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;

test("delay resolves to true once the time passed, and leaves no listener on the signal", async () => {
  const stop = new AbortController();
  assert.equal(await delay(1, { signal: stop.signal }), true);
  assert.equal(listeners(stop.signal), 0);
});

test("delay resolves to false as soon as the signal aborts, and leaves no listener on it", async () => {
  const stop = new AbortController();
  const waiting = delay(600_000, { signal: stop.signal });
  assert.equal(listeners(stop.signal), 1);
  stop.abort();
  assert.equal(await waiting, false);
  assert.equal(listeners(stop.signal), 0);
});

test("delay on a signal that aborted already resolves to false without adding a listener", async () => {
  const stop = new AbortController();
  stop.abort();
  assert.equal(await delay(600_000, { signal: stop.signal }), false);
  assert.equal(listeners(stop.signal), 0);
});

test("delay without a signal waits the time; a negative time is no wait", async () => {
  assert.equal(await delay(1), true);
  assert.equal(await delay(-5), true);
});

test("a thousand delays on one long-lived signal hold no listener and raise no MaxListenersExceededWarning", async () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning);
  process.on("warning", onWarning);
  try {
    const stop = new AbortController();
    for (let i = 0; i < 1_000; i += 1) {
      assert.equal(await delay(0, { signal: stop.signal }), true);
      assert.equal(listeners(stop.signal), 0);
    }
    // A warning is emitted on the next tick after the listener that crossed the limit.
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(
      warnings.filter((w) => w.name === "MaxListenersExceededWarning"),
      [],
    );
  } finally {
    process.off("warning", onWarning);
  }
});
