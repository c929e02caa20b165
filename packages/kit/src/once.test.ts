import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "./once.js";

test("once runs its work at the first call, and every call answers with that one promise", async () => {
  let runs = 0;
  let finish: () => void = () => undefined;
  const stop = once(async () => {
    runs += 1;
    await new Promise<void>((resolve) => (finish = resolve));
    return runs;
  });
  const first = stop();
  const second = stop();
  assert.equal(first, second);
  assert.equal(runs, 1);
  finish();
  assert.equal(await first, 1);
  assert.equal(await stop(), 1);
  assert.equal(runs, 1);
});

test("once's work that failed is not run again: each call is refused with its error", async () => {
  let runs = 0;
  const close = once(() => {
    runs += 1;
    return Promise.reject(new Error("the server would not stop"));
  });
  await assert.rejects(close(), /would not stop/);
  await assert.rejects(close(), /would not stop/);
  assert.equal(runs, 1);
});
