import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, test } from "node:test";
import { DaemonBase, DaemonLife, Lifecycle, aborted } from "./lifecycle.js";

describe("DaemonLife: stop, owned tasks, its logger", () => {
  test("stop() ends the run as its signal would, and leaves no listener on the caller's signal", async () => {
    const lines: string[] = [];
    const life = new DaemonLife({ name: "d", log: (l) => lines.push(l) });
    const signal = new AbortController().signal;
    const running = life.run({ signal }, async (own) => {
      life.set(Lifecycle.running);
      await aborted(own);
    });
    await life.stop();
    await running;
    assert.equal(life.state, Lifecycle.stopped);
    assert.equal(getEventListeners(signal, "abort").length, 0);
    assert.deepEqual(lines, [
      "d: starting -> running",
      "d: running -> stopping",
      "d: stopping -> stopped",
    ]);
    await life.stop(); // harmless twice
  });

  test("the run ends only once its tasks have; tasks end with the stop", async () => {
    const life = new DaemonLife({});
    const stop = new AbortController();
    const ended: string[] = [];
    const running = life.run({ signal: stop.signal }, async (signal) => {
      life.task("beat", async (own) => {
        await aborted(own);
        await Promise.resolve();
        ended.push("beat");
      });
      await aborted(signal);
      ended.push("body");
    });
    stop.abort();
    await running;
    assert.deepEqual(ended, ["body", "beat"]);
  });

  test("a task that fails before the stop fails the daemon, named in the reason", async () => {
    const life = new DaemonLife({});
    const running = life.run({ signal: new AbortController().signal }, async (signal) => {
      life.set(Lifecycle.running);
      life.task("watch", () => Promise.reject(new Error("the watch broke")));
      await aborted(signal);
    });
    await assert.rejects(running, /watch: the watch broke/);
    assert.equal(life.state, Lifecycle.failed);
  });

  test("a task that fails after the stop is part of the stop", async () => {
    const life = new DaemonLife({});
    const stop = new AbortController();
    const running = life.run({ signal: stop.signal }, async (signal) => {
      life.task("close", async (own) => {
        await aborted(own);
        throw new Error("closed under it");
      });
      await aborted(signal);
    });
    stop.abort();
    await running;
    assert.equal(life.state, Lifecycle.stopped);
  });

  test("the logger's children say their name after the daemon's", () => {
    const lines: string[] = [];
    const life = new DaemonLife({ name: "controller", log: (l) => lines.push(l) });
    life.log.child("broker")("reloaded");
    life.log("ready");
    assert.deepEqual(lines, ["controller: broker: reloaded", "controller: ready"]);
  });
});

class Ticker extends DaemonBase {
  ticks = 0;
  constructor() {
    super({ name: "ticker" });
  }
  protected async work(signal: AbortSignal): Promise<void> {
    this.life.set(Lifecycle.running);
    this.ticks += 1;
    await aborted(signal);
  }
}

test("DaemonBase: `await using` stops the daemon at the end of its scope", async () => {
  let ticker: Ticker | undefined;
  let running: Promise<void> | undefined;
  {
    await using t = new Ticker();
    ticker = t;
    running = t.run({ signal: new AbortController().signal });
    assert.equal(t.state, Lifecycle.running);
  }
  await running;
  assert.equal(ticker.state, Lifecycle.stopped);
  assert.equal(ticker.ticks, 1);
});
