import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DaemonLife, Lifecycle, aborted } from "./lifecycle.js";

function life(): { life: DaemonLife; lines: string[] } {
  const lines: string[] = [];
  return { life: new DaemonLife({ name: "d", log: (l) => lines.push(l) }), lines };
}

describe("DaemonLife", () => {
  test("starting, running, stopping, stopped: each change is said once", async () => {
    const { life: l, lines } = life();
    const stop = new AbortController();
    const seen: Lifecycle[] = [];
    const running = l.run({ signal: stop.signal }, async (signal) => {
      seen.push(l.state);
      l.set(Lifecycle.running);
      l.set(Lifecycle.running);
      stop.abort();
      seen.push(l.state);
      await aborted(signal);
    });
    await running;
    assert.deepEqual(seen, [Lifecycle.starting, Lifecycle.stopping]);
    assert.equal(l.state, Lifecycle.stopped);
    assert.deepEqual(lines, [
      "d: starting -> running",
      "d: running -> stopping",
      "d: stopping -> stopped",
    ]);
  });

  test("a second run() joins the first instead of running the body again", async () => {
    const { life: l } = life();
    const stop = new AbortController();
    let bodies = 0;
    const body = async (signal: AbortSignal): Promise<void> => {
      bodies += 1;
      await aborted(signal);
    };
    const first = l.run({ signal: stop.signal }, body);
    const second = l.run({ signal: new AbortController().signal }, body);
    assert.equal(first, second);
    assert.equal(l.started, true);
    stop.abort();
    await second;
    assert.equal(bodies, 1);
  });

  test("a body that throws before the abort fails the daemon, and the error is thrown", async () => {
    const { life: l, lines } = life();
    await assert.rejects(
      l.run({ signal: new AbortController().signal }, () => Promise.reject(new Error("no bus"))),
      /no bus/,
    );
    assert.equal(l.state, Lifecycle.failed);
    await l.finished(); // a failed run is finished too, without throwing again
    l.set(Lifecycle.running);
    assert.equal(l.state, Lifecycle.failed, "failed is final");
    assert.deepEqual(lines, ["d: starting -> failed (no bus)"]);
  });

  test("an error after the abort is a stop, not a failure", async () => {
    const { life: l } = life();
    const stop = new AbortController();
    await l.run({ signal: stop.signal }, () => {
      stop.abort();
      return Promise.reject(new Error("closed under us"));
    });
    assert.equal(l.state, Lifecycle.stopped);
  });

  test("a signal aborted before run() stops at once", async () => {
    const { life: l } = life();
    let ran = false;
    await l.run({ signal: AbortSignal.abort() }, async (signal) => {
      ran = true;
      assert.equal(l.state, Lifecycle.stopping);
      await aborted(signal);
    });
    assert.equal(ran, true);
    assert.equal(l.state, Lifecycle.stopped);
  });
});
