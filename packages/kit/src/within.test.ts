import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { within } from "./within.js";

const listeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;

// A timer left behind would hold this file's process open past its tests: the runner's
// timeout then fails the file. So each test below that ends early also shows the timer went.

test("within resolves to what the promise resolves to, and leaves no timer or listener", async () => {
  const stop = new AbortController();
  assert.equal(await within(Promise.resolve(7), 600_000, "late", { signal: stop.signal }), 7);
  assert.equal(listeners(stop.signal), 0);
});

test("within resolves to otherwise once the time passed first", async () => {
  const never = new Promise<number>(() => undefined);
  const started = Date.now();
  assert.equal(await within(never, 20, "late"), "late");
  assert.ok(Date.now() - started >= 15);
});

test("within resolves to otherwise as soon as the signal aborts, and leaves no listener", async () => {
  const stop = new AbortController();
  const waiting = within(new Promise<number>(() => undefined), 600_000, "stopped", {
    signal: stop.signal,
  });
  assert.equal(listeners(stop.signal), 1);
  stop.abort();
  assert.equal(await waiting, "stopped");
  assert.equal(listeners(stop.signal), 0);
});

test("within on a signal that aborted already resolves to otherwise without adding a listener", async () => {
  const stop = new AbortController();
  stop.abort();
  const failing = Promise.reject(new Error("after the stop"));
  assert.equal(await within(failing, 600_000, false, { signal: stop.signal }), false);
  assert.equal(listeners(stop.signal), 0);
});

test("within rejects with the promise's error when it rejects first", async () => {
  await assert.rejects(within(Promise.reject(new Error("boom")), 600_000, "late"), /boom/);
});

test("a promise that rejects after the deadline is no unhandled rejection", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    let fail = (_: Error): void => undefined;
    const later = new Promise<number>((_, reject) => (fail = reject));
    assert.equal(await within(later, 1, "late"), "late");
    fail(new Error("too late"));
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});
