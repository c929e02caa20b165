/**
 * The bucket mirror on a real bus: ready, coalescing, and a watch that ends (bucket deleted and
 * made again, fx.server stalled with SIGSTOP) caught up with what it missed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { KvBucket } from "../kv-bucket.js";
import { MeshBus } from "../mesh-bus.js";
import { credentialFor, deadline } from "../testing/harness.js";
import { ALL, Mirror, watchedLine, type Dirty, type Watchable } from "./mirror.js";
import { natsOf } from "../mesh-bus.js";
import { busSuite } from "../testing/fixtures.js";

const fx = busSuite({ module: "mirror" }, { before, after });

const Value = z.object({ n: z.number() }).strict();
type Value = z.infer<typeof Value>;

let names = 0;

/** A new bucket with these values standing. */
async function bucketWith(values: Record<string, number>): Promise<KvBucket<Value>> {
  const name = `mirrored_${++names}`;
  await natsOf(fx.admin).kvm.create(name, { history: 5 });
  const bucket = await KvBucket.openWith(fx.admin, name, Value);
  for (const [key, n] of Object.entries(values)) await bucket.put(key, { n });
  return bucket;
}

/** What a map holds, as a plain object. */
function plain(map: ReadonlyMap<string, Value>): Record<string, number> {
  return Object.fromEntries([...map].map(([k, v]): [string, number] => [k, v.n]).sort());
}

/** Takes dirty keys until `until` holds for the map; returns every key taken. */
async function takeUntil(
  mirror: Mirror<{ b: { bucket: KvBucket<Value> } }>,
  until: () => boolean,
  what: string,
): Promise<{ keys: Set<string>; takes: number }> {
  const keys = new Set<string>();
  let takes = 0;
  await deadline(
    (async () => {
      while (!until()) {
        await mirror.changed();
        const dirty: Dirty = mirror.take();
        takes += 1;
        for (const k of dirty.keys) keys.add(k);
      }
    })(),
    30_000,
    what,
  );
  return { keys, takes };
}

function byKey(lines: string[]) {
  return (change: { key: string }) => {
    lines.push(change.key);
    return [change.key];
  };
}

describe("bucket mirror", () => {
  it("is ready once every source handed what stands, an empty one too; nothing is dirty then", async () => {
    const full = await bucketWith({ a: 1, b: 2 });
    const empty = await bucketWith({});
    await using mirror = Mirror.start({
      sources: { full: { bucket: full }, empty: { bucket: empty } },
      touched: (c) => [c.key],
    });
    await deadline(mirror.ready, 5_000, "ready");
    assert.deepEqual(plain(mirror.map("full")), { a: 1, b: 2 });
    assert.equal(mirror.map("empty").size, 0);
    assert.equal(mirror.take().keys.size, 0);
  });

  it("a burst of 500 puts comes as a handful of takes holding every key, an unchanged rewrite dirties nothing", async () => {
    const b = await bucketWith({ same: 7 });
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      touched: (c) => [c.key],
      coalesceMs: 50,
    });
    await deadline(mirror.ready, 5_000, "ready");
    await b.put("same", { n: 7 });
    await Promise.all(Array.from({ length: 500 }, (_, i) => b.put(`k${i}`, { n: i })));
    const { keys, takes } = await takeUntil(mirror, () => mirror.map("b").size === 501, "500 puts");
    assert.equal(keys.size, 500);
    assert.equal(keys.has("same"), false);
    assert.ok(takes <= 50, `${takes} takes for one burst`);
  });

  it("a touched function's ALL and the owner's own touch reach the taker", async () => {
    const b = await bucketWith({});
    await using mirror = Mirror.start({ sources: { b: { bucket: b } }, touched: () => ALL });
    await deadline(mirror.ready, 5_000, "ready");
    mirror.touch(["mine"]);
    await mirror.changed();
    assert.deepEqual([...mirror.take().keys], ["mine"]);
    await b.put("x", { n: 1 });
    await deadline(mirror.changed(), 5_000, "the change");
    assert.equal(mirror.take().all, true);
  });

  it("a required bucket that does not exist fails ready with BUCKET_UNAVAILABLE naming it", async () => {
    const missing = await KvBucket.openWith(fx.admin, "never_made", Value);
    await using mirror = Mirror.start({
      sources: { never_made: { bucket: missing } },
      touched: () => [],
    });
    await assert.rejects(deadline(mirror.ready, 10_000, "ready"), (error: unknown) => {
      assert.ok(isMeshError(error, ErrorCode.BUCKET_UNAVAILABLE));
      assert.match(error.message, /never_made/);
      return true;
    });
  });

  it("an optional bucket that does not exist yet: ready without it, its keys arrive once it is made", async () => {
    const present = await bucketWith({ p: 1 });
    const later = await KvBucket.openWith(fx.admin, "made_later", Value);
    await using mirror = Mirror.start({
      sources: { present: { bucket: present }, later: { bucket: later, optional: true } },
      touched: (c) => [`${c.source}:${c.key}`],
      retry: { initialMs: 100, maxMs: 500 },
    });
    await deadline(mirror.ready, 10_000, "ready");
    assert.equal(mirror.isOpen("later"), false);
    const kv = await natsOf(fx.admin).kvm.create("made_later", { history: 1 });
    await kv.put("l", JSON.stringify({ n: 2 }));
    await deadline(
      (async () => {
        while (mirror.map("later").get("l")?.n !== 2) await mirror.changed();
      })(),
      15_000,
      "the optional bucket's key",
    );
    assert.ok(mirror.take().keys.has("later:l"));
  });

  it("a when-asked optional bucket is tried at the start and then only when reopen is called", async () => {
    const real = await KvBucket.openWith(fx.admin, "made_when_asked", Value);
    let tries = 0;
    // The real bucket's watch, counted: each call is one try to open it on the bus.
    const counted: Watchable<Value> = {
      name: real.name,
      watch: (options) => {
        tries += 1;
        return real.watch(options);
      },
    };
    await using mirror = Mirror.start({
      sources: { later: { bucket: counted, optional: true, reopen: "when-asked" } },
      touched: (c) => [c.key],
      retry: { initialMs: 10, maxMs: 20 },
    });
    await deadline(mirror.ready, 10_000, "ready");
    assert.equal(await mirror.reopen("later"), false, "still missing");
    assert.equal(tries, 2, "the start's try and the one asked for");
    // A window as long as a hundred of the backoff's waits: no try comes by itself.
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(tries, 2);
    const kv = await natsOf(fx.admin).kvm.create("made_when_asked", { history: 1 });
    await kv.put("l", JSON.stringify({ n: 3 }));
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(mirror.map("later").size, 0, "not heard until asked");
    assert.equal(await mirror.reopen("later"), true);
    assert.equal(tries, 3);
    assert.equal(mirror.map("later").get("l")?.n, 3, "what stands is applied when reopen resolves");
    assert.ok(mirror.take().keys.has("l"));
    assert.equal(await mirror.reopen("later"), true, "an open source: no new try");
    assert.equal(tries, 3);
  });

  it("a bucket deleted and made again under it: it says so within 10 s and catches up — a key only in the new bucket is added, a key gone is removed, each dirtied", async (t) => {
    const b = await bucketWith({ kept: 1, gone: 2 });
    const log: string[] = [];
    const touched: string[] = [];
    let endedAt = 0;
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      touched: byKey(touched),
      log: (line) => {
        if (endedAt === 0 && /the watch ended/.test(line)) endedAt = Date.now();
        log.push(line);
      },
      retry: { initialMs: 100, maxMs: 500 },
    });
    await deadline(mirror.ready, 5_000, "ready");
    const kv = await natsOf(fx.admin).kvm.open(b.name);
    const deletedAt = Date.now();
    await kv.destroy();
    const remade = await natsOf(fx.admin).kvm.create(b.name, { history: 5 });
    await remade.put("kept", JSON.stringify({ n: 1 }));
    await remade.put("new", JSON.stringify({ n: 3 }));
    const { keys } = await takeUntil(
      mirror,
      () => JSON.stringify(plain(mirror.map("b"))) === JSON.stringify({ kept: 1, new: 3 }),
      "the mirror caught up with the new bucket",
    );
    t.diagnostic(`the deletion noticed ${endedAt - deletedAt} ms after it`);
    assert.deepEqual([...keys].sort(), ["gone", "new"]);
    assert.ok(endedAt > 0, log.join("\n"));
    assert.ok(endedAt - deletedAt < 10_000, `noticed after ${endedAt - deletedAt} ms`);
    assert.ok(
      log.some((l) => /is back: caught up/.test(l)),
      log.join("\n"),
    );
  });

  it("a fx.server stalled with SIGSTOP for 15 s: noticed in under 10 s, and every put made meanwhile is in the mirror afterwards", async (t) => {
    const b = await bucketWith({ before: 1 });
    const log: Array<{ line: string; at: number }> = [];
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      touched: (c) => [c.key],
      log: (line) => log.push({ line, at: Date.now() }),
      retry: { initialMs: 250, maxMs: 1_000 },
    });
    await deadline(mirror.ready, 5_000, "ready");
    // A second connection writes while the fx.server is stopped: its puts wait in the socket and
    // are stored once the fx.server runs again.
    const writer = await MeshBus.connect(
      credentialFor(fx.server, fx.server.admin, { node: "n0", module: "writer" }),
    );
    try {
      const wb = await KvBucket.openWith(writer, b.name, Value);
      const stoppedAt = Date.now();
      process.kill(fx.server.pid, "SIGSTOP");
      let puts: Promise<unknown>;
      try {
        puts = Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => wb.put(`during${i}`, { n: i })),
        );
        await deadline(
          (async () => {
            while (!log.some((l) => /the watch ended/.test(l.line)))
              await new Promise((r) => setTimeout(r, 100));
          })(),
          15_000,
          "the stall noticed",
        );
        const noticed = (log.find((l) => /the watch ended/.test(l.line))?.at ?? 0) - stoppedAt;
        t.diagnostic(`stall noticed ${noticed} ms after SIGSTOP`);
        assert.ok(noticed < 10_000, `noticed after ${noticed} ms`);
        await new Promise((r) => setTimeout(r, Math.max(0, 15_000 - (Date.now() - stoppedAt))));
      } finally {
        process.kill(fx.server.pid, "SIGCONT");
      }
      await puts;
      // Puts a JS timeout gave up on may still have been stored; those that failed are put again.
      for (let i = 0; i < 20; i++)
        if ((await wb.get(`during${i}`)) === undefined) await wb.put(`during${i}`, { n: i });
      await wb.put("after", { n: 99 });
      await takeUntil(mirror, () => mirror.map("b").size === 22, "every put in the mirror");
      assert.equal(mirror.map("b").get("after")?.n, 99);
    } finally {
      await writer.close();
    }
  });
});

describe("what a mirror says it watches", () => {
  it("names each whole bucket (every node's changes) and each bucket it watches only part of", () => {
    const bucket = (name: string) => ({ name });
    assert.equal(
      watchedLine({
        presence: { bucket: bucket("mesh-presence") },
        wants: { bucket: bucket("mesh-wants"), key: ">" },
        config: { bucket: bucket("mesh-config"), key: "*.*" },
      }),
      "watching 2 whole bucket(s), every node's changes: mesh-presence, mesh-wants; part of 1: mesh-config (*.*)",
    );
  });
});
