/**
 * The bucket mirror on a real bus: ready, each change told once, and a watch that ends (bucket
 * deleted and made again, the server stalled with SIGSTOP) caught up with what it missed. What
 * the owner does with a burst of changes is the reconciler's (reconciler.test.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { KvBucket } from "../kv-bucket.js";
import { MeshBus } from "../mesh-bus.js";
import { credentialFor, deadline } from "../testing/harness.js";
import { waitFor } from "../testing/wait-for.js";
import { Mirror, watchedLine, type MirrorChange, type Watchable } from "./mirror.js";
import { natsOf } from "../mesh-bus.js";
import { busSuite } from "../testing/fixtures.js";
import { Heard } from "./test-support.js";

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

describe("bucket mirror", () => {
  it("is ready once every source handed what stands, an empty one too; what stood was told before", async () => {
    const full = await bucketWith({ a: 1, b: 2 });
    const empty = await bucketWith({});
    const told: string[] = [];
    await using mirror = Mirror.start({
      sources: { full: { bucket: full }, empty: { bucket: empty } },
      onChange: (c) => told.push(`${c.source}:${c.key}:${String(mirror.isReady)}`),
    });
    await deadline(mirror.ready, 5_000, "ready");
    assert.deepEqual(plain(mirror.map("full")), { a: 1, b: 2 });
    assert.equal(mirror.map("empty").size, 0);
    assert.deepEqual(told.sort(), ["full:a:false", "full:b:false"]);
  });

  it("each of 500 puts is told once, with what was kept before and after; an unchanged rewrite is not told", async () => {
    const b = await bucketWith({ same: 7 });
    const heard = new Heard<MirrorChange>();
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      onChange: (c) => {
        if (mirror.isReady) heard.onChange(c);
      },
    });
    await deadline(mirror.ready, 5_000, "ready");
    await b.put("same", { n: 7 });
    await Promise.all(Array.from({ length: 500 }, (_, i) => b.put(`k${i}`, { n: i })));
    await heard.until(() => mirror.map("b").size === 501, "500 puts");
    assert.equal(heard.changes.length, 500, "one change told per put");
    assert.equal(heard.keys().size, 500);
    assert.equal(heard.keys().has("same"), false);
    const k7 = heard.changes.find((c) => c.key === "k7");
    assert.deepEqual([k7?.before, k7?.after], [undefined, { n: 7 }]);
  });

  it("a required bucket that does not exist fails ready with BUCKET_UNAVAILABLE naming it", async () => {
    const missing = await KvBucket.openWith(fx.admin, "never_made", Value);
    await using mirror = Mirror.start({ sources: { never_made: { bucket: missing } } });
    await assert.rejects(deadline(mirror.ready, 10_000, "ready"), (error: unknown) => {
      assert.ok(isMeshError(error, ErrorCode.BUCKET_UNAVAILABLE));
      assert.match(error.message, /never_made/);
      return true;
    });
  });

  it("a required bucket the bus does not answer for before it was ever heard: tried again, ready once the server runs again", async () => {
    const b = await bucketWith({ one: 1, two: 2 });
    const log: string[] = [];
    const start = () =>
      Mirror.start({
        sources: { b: { bucket: b } },
        log: (line) => log.push(line),
        retry: { initialMs: 250, maxMs: 1_000 },
      });
    process.kill(fx.server.pid, "SIGSTOP");
    let mirror: ReturnType<typeof start> | undefined;
    try {
      mirror = start();
      // Stalled past the first read's timeout: the try fails as the bus's trouble, not a refusal.
      await waitFor(() => log.some((l) => /watching b again/.test(l)), {
        timeout: 60_000,
        what: "the first try to fail and be made again",
      });
    } finally {
      process.kill(fx.server.pid, "SIGCONT");
    }
    assert.ok(mirror !== undefined);
    await using started = mirror;
    await deadline(started.ready, 60_000, "ready once the server runs again");
    assert.deepEqual(plain(started.map("b")), { one: 1, two: 2 });
  });

  it("an optional bucket that does not exist yet: ready without it, its keys arrive once it is made", async () => {
    const present = await bucketWith({ p: 1 });
    const later = await KvBucket.openWith(fx.admin, "made_later", Value);
    const heard = new Heard<MirrorChange>();
    await using mirror = Mirror.start({
      sources: { present: { bucket: present }, later: { bucket: later, optional: true } },
      onChange: heard.onChange,
      retry: { initialMs: 100, maxMs: 500 },
    });
    await deadline(mirror.ready, 10_000, "ready");
    assert.equal(mirror.isOpen("later"), false);
    const kv = await natsOf(fx.admin).kvm.create("made_later", { history: 1 });
    await kv.put("l", JSON.stringify({ n: 2 }));
    await heard.until(
      () => mirror.map("later").get("l")?.n === 2,
      "the optional bucket's key",
      15_000,
    );
    assert.ok(heard.changes.some((c) => c.source === "later" && c.key === "l"));
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
    const heard = new Heard<MirrorChange>();
    await using mirror = Mirror.start({
      sources: { later: { bucket: counted, optional: true, reopen: "when-asked" } },
      onChange: heard.onChange,
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
    assert.ok(heard.keys().has("l"), "and told");
    assert.equal(await mirror.reopen("later"), true, "an open source: no new try");
    assert.equal(tries, 3);
  });

  it("a bucket deleted and made again under it: it says so within 10 s and catches up — a key only in the new bucket is added, a key gone is removed, each told", async (t) => {
    const b = await bucketWith({ kept: 1, gone: 2 });
    const log: string[] = [];
    const heard = new Heard<MirrorChange>();
    let endedAt = 0;
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      onChange: heard.onChange,
      log: (line) => {
        if (endedAt === 0 && /the watch ended/.test(line)) endedAt = Date.now();
        log.push(line);
      },
      retry: { initialMs: 100, maxMs: 500 },
    });
    await deadline(mirror.ready, 5_000, "ready");
    const standing = heard.changes.length;
    const kv = await natsOf(fx.admin).kvm.open(b.name);
    const deletedAt = Date.now();
    await kv.destroy();
    const remade = await natsOf(fx.admin).kvm.create(b.name, { history: 5 });
    await remade.put("kept", JSON.stringify({ n: 1 }));
    await remade.put("new", JSON.stringify({ n: 3 }));
    await heard.until(
      () => JSON.stringify(plain(mirror.map("b"))) === JSON.stringify({ kept: 1, new: 3 }),
      "the mirror caught up with the new bucket",
    );
    t.diagnostic(`the deletion noticed ${endedAt - deletedAt} ms after it`);
    assert.deepEqual([...heard.keys(standing)].sort(), ["gone", "new"]);
    assert.ok(endedAt > 0, log.join("\n"));
    assert.ok(endedAt - deletedAt < 10_000, `noticed after ${endedAt - deletedAt} ms`);
    assert.ok(
      log.some((l) => /is back: caught up/.test(l)),
      log.join("\n"),
    );
  });

  it("a server stalled with SIGSTOP for 15 s: noticed in under 10 s, and every put made meanwhile is in the mirror afterwards", async (t) => {
    const b = await bucketWith({ before: 1 });
    const log: Array<{ line: string; at: number }> = [];
    const heard = new Heard<MirrorChange>();
    await using mirror = Mirror.start({
      sources: { b: { bucket: b } },
      onChange: heard.onChange,
      log: (line) => log.push({ line, at: Date.now() }),
      retry: { initialMs: 250, maxMs: 1_000 },
    });
    await deadline(mirror.ready, 5_000, "ready");
    // A second connection writes while the server is stopped: its puts wait in the socket and
    // are stored once the server runs again.
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
      await heard.until(() => mirror.map("b").size === 22, "every put in the mirror");
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
