/**
 * The reconciler on a real bus: every standing key once the mirror stands, then each key a
 * change concerns; never one key twice at once, changes during a pass coalesced into one more;
 * a failing key retried on its own backoff and reset by a success; requeue-after honoured; a
 * burst of changes coalesced by the queue (the mirror holds none).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { z } from "zod";
import { Lifecycle } from "@mesh/kit";
import { KvBucket } from "../kv-bucket.js";
import { MeshBus, natsOf } from "../mesh-bus.js";
import { credentialFor, startTestServer, type TestServer } from "../testing/harness.js";
import { waitFor } from "../testing/wait-for.js";
import { reconciler, type Reconcile, type Reconciler } from "./reconciler.js";

const Value = z.object({ n: z.number() }).strict();
type Value = z.infer<typeof Value>;

let server: TestServer;
let admin: MeshBus;
let names = 0;

before(async () => {
  server = await startTestServer();
  admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n0", module: "reconciler" }),
  );
});

after(async () => {
  await admin?.close();
  await server?.stop();
});

async function bucketWith(values: Record<string, number>): Promise<KvBucket<Value>> {
  const name = `reconciled_${++names}`;
  await natsOf(admin).kvm.create(name, { history: 5 });
  const bucket = await KvBucket.openWith(admin, name, Value);
  for (const [key, n] of Object.entries(values)) await bucket.put(key, { n });
  return bucket;
}

const QUICK = { initialMs: 5, maxMs: 20, jitter: 0 } as const;

type Values = { values: { bucket: KvBucket<Value> } };

/**
 * A reconciler of each key of `bucket`, on a quick retry: every standing key once the mirror
 * stands, then each changed key.
 */
function eachKeyOf(
  bucket: KvBucket<Value>,
  options: { reconcile: Reconcile<Values, string>; workers?: number },
): Reconciler<Values, string> {
  return reconciler({
    sources: { values: { bucket } },
    keysOf: (change) => [change.key],
    allKeys: (mirror) => mirror.map("values").keys(),
    retry: QUICK,
    ...options,
  });
}

test("every standing key once the mirror stands, then each changed key; never one key twice at once", async () => {
  const bucket = await bucketWith({ a: 1, b: 1, c: 1 });
  const inFlight = new Set<string>();
  const overlaps: string[] = [];
  const passes: string[] = [];
  const seen = new Map<string, number>();
  let release: () => void = () => undefined;
  let gate: Promise<void> | undefined;
  const r = eachKeyOf(bucket, {
    workers: 3,
    reconcile: async (key, { mirror }) => {
      if (inFlight.has(key)) overlaps.push(key);
      inFlight.add(key);
      passes.push(key);
      if (key === "a" && gate !== undefined) await gate;
      seen.set(key, mirror.map("values").get(key)?.n ?? 0);
      inFlight.delete(key);
    },
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  try {
    await waitFor(() => passes.length >= 3, { what: "the standing keys reconciled" });
    assert.deepEqual([...passes].sort(), ["a", "b", "c"]);
    assert.equal(r.state, Lifecycle.running);
    // Hold a's next pass, change it three times meanwhile: one more pass sees the last value.
    gate = new Promise<void>((resolve) => (release = resolve));
    await bucket.put("a", { n: 2 });
    await waitFor(() => inFlight.has("a"), { what: "a's pass began" });
    await bucket.put("a", { n: 3 });
    await bucket.put("a", { n: 4 });
    await bucket.put("a", { n: 5 });
    await waitFor(() => r.mirror?.map("values").get("a")?.n === 5, { what: "the mirror has a=5" });
    gate = undefined;
    release();
    await waitFor(() => seen.get("a") === 5, { what: "a reconciled with its last value" });
    assert.ok(
      passes.filter((k) => k === "a").length <= 3,
      `a's passes: ${passes.filter((k) => k === "a").length} (the first, the held one, one more)`,
    );
    assert.deepEqual(overlaps, [], "no key reconciled twice at once");
  } finally {
    stop.abort();
    await running;
  }
  assert.equal(r.state, Lifecycle.stopped);
});

test("a failing key is retried on its own backoff, and a success resets it", async () => {
  const bucket = await bucketWith({ bad: 1, good: 1 });
  const failuresSeen: number[] = [];
  let goodPasses = 0;
  const r = eachKeyOf(bucket, {
    reconcile: (key, { failures }) => {
      if (key === "good") {
        goodPasses += 1;
        return;
      }
      failuresSeen.push(failures);
      if (failuresSeen.length < 4) throw new Error("not yet");
    },
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  try {
    await waitFor(() => failuresSeen.length >= 4, { what: "four passes of the failing key" });
    assert.deepEqual(failuresSeen.slice(0, 4), [0, 1, 2, 3]);
    // It succeeded at its fourth pass: a change reconciles it with its failures reset.
    await bucket.put("bad", { n: 2 });
    await waitFor(() => failuresSeen.length >= 5, { what: "the pass after the change" });
    assert.equal(failuresSeen[4], 0);
    assert.equal(goodPasses, 1, "the other key was reconciled once, its neighbour's trouble aside");
  } finally {
    stop.abort();
    await running;
  }
});

test("requeueAfterMs asks about the key again though nothing changed; enqueue asks from outside", async () => {
  const bucket = await bucketWith({ k: 1 });
  let passes = 0;
  const r = eachKeyOf(bucket, {
    reconcile: () => {
      passes += 1;
      return passes < 3 ? { requeueAfterMs: 10 } : undefined;
    },
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  try {
    await waitFor(() => passes >= 3, { what: "three passes, two asked for" });
    r.enqueue("k");
    await waitFor(() => passes >= 4, { what: "the pass enqueued from outside" });
  } finally {
    await r.stop();
    await running;
  }
  assert.equal(r.state, Lifecycle.stopped);
});

test("a burst reconciler is handed every waiting key at once; a change during a burst makes one more", async () => {
  const bucket = await bucketWith({ a: 1, b: 1 });
  const bursts: string[][] = [];
  const heard: string[] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> | undefined;
  const r = reconciler({
    sources: { values: { bucket } },
    // Told also of the standing values, before the mirror stands; keysOf only after.
    onChange: (change, mirror) => heard.push(`${change.key}:${String(mirror.isReady)}`),
    keysOf: (change) => [change.key],
    allKeys: () => ["*"],
    retry: QUICK,
    reconcileBurst: async (keys) => {
      bursts.push([...keys].sort());
      if (gate !== undefined) await gate;
    },
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  try {
    await waitFor(() => bursts.length >= 1, { what: "the first burst" });
    assert.deepEqual(bursts[0], ["*"]);
    assert.deepEqual(heard.sort(), ["a:false", "b:false"]);
    gate = new Promise<void>((resolve) => (release = resolve));
    await bucket.put("a", { n: 2 });
    await waitFor(() => bursts.length >= 2, { what: "a's burst began" });
    // Three keys change while a's burst is held: they make one burst after it, not three.
    await bucket.put("a", { n: 3 });
    await bucket.put("b", { n: 2 });
    await bucket.put("c", { n: 1 });
    await waitFor(() => r.mirror?.map("values").get("c") !== undefined, { what: "c mirrored" });
    gate = undefined;
    release();
    await waitFor(() => bursts.flat().includes("c"), { what: "the burst after the held one" });
    assert.deepEqual(bursts.slice(1), [["a"], ["a", "b", "c"]]);
  } finally {
    stop.abort();
    await running;
  }
});

test("500 puts while a burst is held come as one burst after it, each key once; an unchanged rewrite concerns no key", async () => {
  const bucket = await bucketWith({ same: 7 });
  const bursts: string[][] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const r = reconciler({
    sources: { values: { bucket } },
    keysOf: (change) => [change.key],
    retry: QUICK,
    reconcileBurst: async (keys) => {
      bursts.push([...keys]);
      if (bursts.length === 1) await gate;
    },
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  try {
    await waitFor(() => r.state === Lifecycle.running, { what: "the mirror standing" });
    await bucket.put("first", { n: 1 });
    await waitFor(() => bursts.length === 1, { what: "the first burst, held" });
    await bucket.put("same", { n: 7 });
    await Promise.all(Array.from({ length: 500 }, (_, i) => bucket.put(`k${i}`, { n: i })));
    await waitFor(() => r.mirror?.map("values").size === 502, { what: "500 puts mirrored" });
    release();
    await waitFor(() => bursts.length >= 2, { what: "the burst after the held one" });
    assert.deepEqual(bursts[0], ["first"]);
    const after = bursts[1] ?? [];
    assert.equal(after.length, 500, "every key in one burst, each once");
    assert.equal(new Set(after).size, 500);
    assert.equal(after.includes("same"), false, "an unchanged rewrite concerns no key");
    assert.equal(bursts.length, 2);
  } finally {
    stop.abort();
    await running;
  }
});

test("a stop before the mirror stands ends the run at once, not when a source gives up", async () => {
  // A source that hands nothing, ever: the mirror never stands (its give-up is a minute off).
  const silent = {
    name: "silent",
    watch: ({ signal }: { signal?: AbortSignal }) =>
      (async function* () {
        await new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve()));
        yield* [];
      })(),
  };
  const r = reconciler({
    sources: { silent: { bucket: silent } },
    keysOf: () => [],
    retry: QUICK,
    reconcile: () => undefined,
  });
  const stop = new AbortController();
  const running = r.run({ signal: stop.signal });
  await waitFor(() => r.mirror !== undefined, { what: "the mirror started" });
  stop.abort();
  await waitFor(() => r.state === Lifecycle.stopped, { what: "the run ended", timeout: 5_000 });
  await running;
});
