import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { retry, type RetryAttempt } from "./retry.js";

const QUICK = { initialMs: 1, maxMs: 4, jitter: 0 } as const;
const always = (): boolean => true;

/** A function that fails `times` times with `error`, then returns `value`. */
function failing<T>(times: number, value: T, error = new Error("not yet")) {
  let calls = 0;
  const fn = (): Promise<T> => {
    calls += 1;
    return calls <= times ? Promise.reject(error) : Promise.resolve(value);
  };
  return { fn, calls: () => calls };
}

test("retry: table of outcomes", async (t) => {
  const permanent = new MeshError(ErrorCode.INVALID_VALUE, "bad value");
  const rows: {
    name: string;
    failures: number;
    maxAttempts?: number;
    isRetriable?: (e: unknown) => boolean;
    calls: number;
    outcome: "value" | "error";
  }[] = [
    { name: "succeeds at once", failures: 0, calls: 1, outcome: "value" },
    { name: "succeeds after three failures", failures: 3, calls: 4, outcome: "value" },
    { name: "gives up after maxAttempts", failures: 9, maxAttempts: 3, calls: 3, outcome: "error" },
    {
      name: "an error that is not retriable is thrown at once",
      failures: 5,
      isRetriable: () => false,
      calls: 1,
      outcome: "error",
    },
  ];
  for (const row of rows) {
    await t.test(row.name, async () => {
      const f = failing(row.failures, "done", permanent);
      const attempt = retry(f.fn, {
        policy: QUICK,
        isRetriable: row.isRetriable ?? always,
        ...(row.maxAttempts === undefined ? {} : { maxAttempts: row.maxAttempts }),
      });
      if (row.outcome === "value") assert.equal(await attempt, "done");
      else await assert.rejects(attempt, (e) => e === permanent);
      assert.equal(f.calls(), row.calls);
    });
  }
});

test("retry waits by the backoff's policy and says each wait before it", async () => {
  const heard: RetryAttempt[] = [];
  const f = failing(4, 7);
  const value = await retry(f.fn, {
    policy: { initialMs: 1, maxMs: 4, jitter: 0 },
    isRetriable: always,
    onRetry: (a) => heard.push(a),
  });
  assert.equal(value, 7);
  assert.deepEqual(
    heard.map((a) => [a.attempt, a.delayMs, a.error.message]),
    [
      [1, 1, "not yet"],
      [2, 2, "not yet"],
      [3, 4, "not yet"],
      [4, 4, "not yet"],
    ],
  );
});

test("retry stopped while waiting rejects with ABORTED, its cause the last error, and leaves no listener", async () => {
  const stop = new AbortController();
  const last = new Error("bus away");
  const attempt = retry(() => Promise.reject(last), {
    policy: { initialMs: 600_000, maxMs: 600_000 },
    isRetriable: always,
    signal: stop.signal,
    onRetry: () => stop.abort(),
  });
  await assert.rejects(
    attempt,
    (e) => isMeshError(e) && e.code === ErrorCode.ABORTED && e.cause === last,
  );
  assert.equal(getEventListeners(stop.signal, "abort").length, 0);
});

test("retry on a signal that aborted already makes no attempt", async () => {
  const stop = new AbortController();
  stop.abort();
  const f = failing(0, 1);
  await assert.rejects(
    retry(f.fn, { policy: QUICK, isRetriable: always, signal: stop.signal }),
    (e) => isMeshError(e) && e.code === ErrorCode.ABORTED,
  );
  assert.equal(f.calls(), 0);
});

test("retry: an attempt that fails because the signal aborted during it is a stop, not retried", async () => {
  const stop = new AbortController();
  let calls = 0;
  await assert.rejects(
    retry(
      () => {
        calls += 1;
        stop.abort();
        return Promise.reject(new Error("cut short"));
      },
      { policy: QUICK, isRetriable: always, signal: stop.signal },
    ),
    (e) => isMeshError(e) && e.code === ErrorCode.ABORTED,
  );
  assert.equal(calls, 1);
});

test("a hundred retries on one signal hold a constant number of abort listeners", async () => {
  const stop = new AbortController();
  const counts: number[] = [];
  const f = failing(100, "up");
  await retry(f.fn, {
    policy: { initialMs: 1, maxMs: 1, jitter: 0 },
    isRetriable: always,
    signal: stop.signal,
    onRetry: () => counts.push(getEventListeners(stop.signal, "abort").length),
  });
  assert.equal(counts.length, 100);
  assert.deepEqual(new Set(counts), new Set([0]));
  assert.equal(getEventListeners(stop.signal, "abort").length, 0);
});
