/**
 * A watch notices its own end within 10 s (issue 14.5, issue 15 "stalled watch"): its bucket
 * deleted, or a server that stops sending without closing (SIGSTOP is a faithful stall: the
 * connection stays open and the client's own pings are minutes apart).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { KvBucket } from "./kv-bucket.js";
import { deadline } from "./testing/harness.js";
import { natsOf } from "./mesh-bus.js";
import { busSuite } from "./testing/fixtures.js";

const fx = busSuite({ module: "watcher" }, { before, after });

const Value = z.object({ n: z.number() }).strict();
const NOTICED_WITHIN_MS = 10_000;

/** Runs a watch until it throws; resolves with the error and when it came. */
function watchUntilEnd(bucket: KvBucket<unknown>): {
  current: Promise<void>;
  end: Promise<{ error: unknown; at: number }>;
} {
  let markCurrent!: () => void;
  const current = new Promise<void>((r) => (markCurrent = r));
  const end = (async () => {
    try {
      for await (const event of bucket.watch()) if (event.type === "current") markCurrent();
      return { error: undefined, at: Date.now() };
    } catch (error) {
      return { error, at: Date.now() };
    }
  })();
  return { current, end };
}

describe("a long-lived watch notices its end", () => {
  it("an idle watch on a running server is not ended: its 3 s heartbeats keep it for 20 s and more", async () => {
    await natsOf(fx.admin).kvm.create("idle_watch", { history: 1 });
    const bucket = await KvBucket.openWith(fx.admin, "idle_watch", Value);
    const stop = new AbortController();
    const seen: number[] = [];
    let markCurrent!: () => void;
    const current = new Promise<void>((r) => (markCurrent = r));
    const watching = (async () => {
      for await (const event of bucket.watch({ signal: stop.signal })) {
        if (event.type === "current") markCurrent();
        if (event.type === "put") seen.push(event.value.n);
      }
    })();
    try {
      await deadline(current, 5_000, "the standing values");
      await new Promise((r) => setTimeout(r, 20_000));
      await bucket.put("late", { n: 20 });
      await deadline(
        (async () => {
          while (!seen.includes(20)) await new Promise((r) => setTimeout(r, 50));
        })(),
        5_000,
        "the put after 20 s of quiet",
      );
    } finally {
      stop.abort();
    }
    await watching;
  });

  it("a watch whose bucket is deleted ends with WATCH_ENDED in under 10 s", async (t) => {
    const kv = await natsOf(fx.admin).kvm.create("deleted_under_watch", { history: 1 });
    await kv.put("a", JSON.stringify({ n: 1 }));
    const bucket = await KvBucket.openWith(fx.admin, "deleted_under_watch", Value);
    const { current, end } = watchUntilEnd(bucket);
    await deadline(current, 5_000, "the standing values");
    const deletedAt = Date.now();
    await kv.destroy();
    const { error, at } = await deadline(end, NOTICED_WITHIN_MS, "the end of the watch");
    assert.ok(
      isMeshError(error, ErrorCode.WATCH_ENDED),
      `expected WATCH_ENDED, got ${String(error)}`,
    );
    assert.match((error as Error).message, /watching deleted_under_watch: the watch ended/);
    t.diagnostic(`noticed ${at - deletedAt} ms after the bucket was deleted`);
    assert.ok(at - deletedAt < NOTICED_WITHIN_MS, `noticed after ${at - deletedAt} ms`);
  });

  it("a watch under a server stopped with SIGSTOP ends with WATCH_ENDED in under 10 s, saying the server went silent", async (t) => {
    await natsOf(fx.admin).kvm.create("stalled_under_watch", { history: 1 });
    const bucket = await KvBucket.openWith(fx.admin, "stalled_under_watch", Value);
    const { current, end } = watchUntilEnd(bucket);
    await deadline(current, 5_000, "the standing values");
    const stoppedAt = Date.now();
    process.kill(fx.server.pid, "SIGSTOP");
    try {
      const { error, at } = await deadline(end, NOTICED_WITHIN_MS, "the end of the watch");
      assert.ok(
        isMeshError(error, ErrorCode.WATCH_ENDED),
        `expected WATCH_ENDED, got ${String(error)}`,
      );
      assert.match((error as Error).message, /sent nothing, not even a heartbeat/);
      const noticed = at - stoppedAt;
      t.diagnostic(`noticed ${noticed} ms after SIGSTOP`);
      assert.ok(noticed < NOTICED_WITHIN_MS, `noticed after ${noticed} ms`);
    } finally {
      process.kill(fx.server.pid, "SIGCONT");
    }
  });
});
