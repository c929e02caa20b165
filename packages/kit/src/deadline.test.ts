import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { withDeadline } from "./deadline.js";
import { printedBy } from "./test-support.js";

const listeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;
const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
const expired = (): Error => new Error("the time is up");

test("work that settles first: the result is its value or its error; its signal never aborts", async () => {
  const stop = new AbortController();
  let told: AbortSignal | undefined;
  const value = await withDeadline(
    ({ signal }) => {
      told = signal;
      return Promise.resolve(42);
    },
    { ms: 600_000, signal: stop.signal, expired },
  );
  assert.equal(value, 42);
  assert.equal(told?.aborted, false);
  assert.equal(listeners(stop.signal), 0, "the listener on the caller's signal is removed");
  const failure = new Error("it failed");
  await assert.rejects(
    withDeadline(() => Promise.reject(failure), { ms: 600_000, expired }),
    (error: unknown) => error === failure,
  );
  await assert.rejects(
    withDeadline(
      () => {
        throw failure;
      },
      { ms: 600_000, expired },
    ),
    (error: unknown) => error === failure,
  );
});

test("work past its deadline: rejected with expired(), its signal aborted with that error, its late answer dropped", async () => {
  const stop = new AbortController();
  let told: AbortSignal | undefined;
  let answer: (value: string) => void = () => undefined;
  const result = withDeadline(
    ({ signal }) => {
      told = signal;
      return new Promise<string>((resolve) => (answer = resolve));
    },
    { ms: 10, signal: stop.signal, expired },
  );
  await assert.rejects(result, /the time is up/);
  assert.equal(told?.aborted, true);
  assert.match(String((told?.reason as Error).message), /the time is up/);
  answer("too late");
  assert.equal(listeners(stop.signal), 0);
});

test("a work that reads its signal only after the deadline finds it aborted already", async () => {
  let read: (() => AbortSignal) | undefined;
  const result = withDeadline(
    (deadline) => {
      read = () => deadline.signal;
      return never();
    },
    { ms: 10, expired },
  );
  await assert.rejects(result, /the time is up/);
  assert.equal(read?.().aborted, true);
  assert.match(String((read?.().reason as Error).message), /the time is up/);
});

test("a stop before the deadline: rejected with ABORTED (its cause the signal's reason), or with aborted()", async () => {
  const stop = new AbortController();
  let told: AbortSignal | undefined;
  const result = withDeadline(
    ({ signal }) => {
      told = signal;
      return never();
    },
    { ms: 600_000, signal: stop.signal, expired },
  );
  stop.abort("SIGTERM");
  await assert.rejects(result, (error: unknown) => {
    assert.ok(isMeshError(error, ErrorCode.ABORTED));
    assert.equal(error.cause, "SIGTERM");
    return true;
  });
  assert.equal(told?.aborted, true);
  assert.equal(listeners(stop.signal), 0);
  const again = new AbortController();
  const own = withDeadline(never, {
    ms: 600_000,
    signal: again.signal,
    expired,
    aborted: () => new Error("starting was aborted"),
  });
  again.abort();
  await assert.rejects(own, /starting was aborted/);
});

test("a signal that aborted already: rejected at once, the work never started, no listener added", async () => {
  const stop = new AbortController();
  stop.abort();
  let started = false;
  await assert.rejects(
    withDeadline(
      () => {
        started = true;
        return never();
      },
      { ms: 600_000, signal: stop.signal, expired },
    ),
    (error: unknown) => isMeshError(error, ErrorCode.ABORTED),
  );
  assert.equal(started, false);
  assert.equal(listeners(stop.signal), 0);
});

test("a thousand deadlines on one long-lived signal leave no listener behind, whichever way each ended", async () => {
  const stop = new AbortController();
  for (let i = 0; i < 1_000; i += 1) {
    const work = i % 2 === 0 ? () => Promise.resolve(i) : () => never<number>();
    await withDeadline(work, { ms: 0, signal: stop.signal, expired }).catch(() => undefined);
    assert.equal(listeners(stop.signal), 0);
  }
});

test("ref: false — a deadline alone does not keep the process alive; by default it does", () => {
  const url = new URL("./deadline.js", import.meta.url).href;
  const run = (ref: string): string =>
    printedBy([
      `import { withDeadline } from ${JSON.stringify(url)};`,
      `withDeadline(() => new Promise(() => {}), { ms: 300, expired: () => new Error("expired")${ref} })`,
      `  .catch((e) => console.log(e.message));`,
    ]);
  assert.equal(run(""), "expired", "held open until the deadline");
  assert.equal(run(", ref: false"), "", "the process ended before it");
});
