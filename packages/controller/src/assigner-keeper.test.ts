/**
 * The assigner keeper on a real bus (decision 0191): when the node that runs delivery reports a
 * new assigner build failing, and it ran another build healthy before, the keeper wants that build
 * again, by rule 5, and writes no other want; a put of the assigner and a build it never ran
 * healthy before are left alone.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { busSuite, deadline } from "@mesh/bus/testing";
import { Bucket, MeshPart, type Build, type Have, type Want } from "@mesh/protocol";
import { AssignerKeeper } from "./assigner-keeper.js";

const T0 = "2026-01-01T00:00:00.000Z";
const D = (c: string) => c.repeat(64);
const KEY = `n1.${MeshPart.assigner}`;

const build = (id: string): Build => ({
  module: MeshPart.assigner,
  build: id,
  status: "built",
  candidate: Number(id.split("-")[0]),
  manifestDigest: D(id[0] as string),
  bundles: [],
  log: "",
  timings: { started: T0 },
});
const want = (b: string, rule: Want["rule"] = "newest"): Want => ({
  build: b,
  manifestDigest: D(b[0] as string),
  fingerprint: "",
  rule,
  reason: "the assigner's",
});
const have = (b: string, health: Have["health"]): Have => ({
  build: b,
  fingerprint: "x",
  health,
  since: new Date().toISOString(),
  restarts: 0,
});

describe("the assigner keeper", () => {
  const bus = busSuite({ module: "controller", layout: true }, { before, after });
  const stop = new AbortController();
  let running: Promise<void> | undefined;

  before(async () => {
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    for (const id of ["1-a", "2-b"]) await builds.put(`${MeshPart.assigner}.${id}`, build(id));
    running = AssignerKeeper.create({ bus: bus.admin }).run({ signal: stop.signal });
  });
  after(async () => {
    stop.abort();
    await running;
  });

  /** The keeper's set-back of `node`'s assigner, once it is written. */
  async function setBackOf(node: string): Promise<Want> {
    const wants = await KvBucket.open(bus.admin, Bucket.wants);
    const ac = new AbortController();
    try {
      return await deadline(
        (async () => {
          for await (const e of wants.watch({
            key: `${node}.${MeshPart.assigner}`,
            signal: ac.signal,
          }))
            if (e.type === "put" && e.value.rule === "set-back") return e.value;
          throw new Error("the watch ended");
        })(),
        20_000,
        `the keeper's set-back on ${node}`,
      );
    } finally {
      ac.abort();
    }
  }

  /**
   * A node whose assigner the keeper sets back, written after what a test checks is left alone:
   * once its set-back is written, the keeper has taken in every change written before it (one
   * worker, in order), so "nothing else was written" is checked without waiting on a clock.
   */
  async function marker(node: string): Promise<void> {
    const key = `${node}.${MeshPart.assigner}`;
    const haveBucket = await KvBucket.open(bus.admin, Bucket.have);
    await haveBucket.put(key, have("1-a", "healthy"));
    await (await KvBucket.open(bus.admin, Bucket.wants)).put(key, want("2-b"));
    await haveBucket.put(key, have("2-b", "failing"));
    await setBackOf(node);
  }

  /** Every write to the wants from now on, by key. */
  async function watchingWants(): Promise<{ writes: string[]; stop: () => void }> {
    const wants = await KvBucket.open(bus.admin, Bucket.wants);
    const ac = new AbortController();
    const writes: string[] = [];
    let current!: () => void;
    const heard = new Promise<void>((r) => (current = r));
    void (async () => {
      for await (const e of wants.watch({ key: ">", include: "updates", signal: ac.signal })) {
        if (e.type === "current") current();
        else
          writes.push(`${e.key} ${e.type === "put" ? `${e.value.rule} ${e.value.build}` : e.type}`);
      }
    })().catch(() => undefined);
    await deadline(heard, 10_000, "the watch of the wants");
    return { writes, stop: () => ac.abort() };
  }

  test("a new build failing where 1-a ran healthy is set back to 1-a; hello's want is not touched", async () => {
    const wants = await KvBucket.open(bus.admin, Bucket.wants);
    const haveBucket = await KvBucket.open(bus.admin, Bucket.have);
    await wants.put("n1.hello", want("1-h"));
    await haveBucket.put(KEY, have("1-a", "healthy"));
    await wants.put(KEY, want("2-b"));
    const watching = await watchingWants();
    try {
      await haveBucket.put(KEY, have("2-b", "starting"));
      await haveBucket.put(KEY, have("2-b", "failing"));
      const set = await setBackOf("n1");
      assert.equal(set.build, "1-a");
      assert.equal(set.manifestDigest, D("1"));
      assert.match(set.reason, /by the controller/);
      // The assigner's build 1-a runs again: nothing more is written for n1.
      await haveBucket.put(KEY, have("1-a", "healthy"));
      await marker("m1");
      assert.deepEqual(
        watching.writes.filter((w) => !w.startsWith("m1.")),
        [`${KEY} set-back 1-a`],
        "one write for n1, the set-back, and none for hello",
      );
    } finally {
      watching.stop();
    }
  });

  test("a put of the assigner, and a failing build with no healthy one before it, are left alone", async () => {
    const wants = await KvBucket.open(bus.admin, Bucket.wants);
    const haveBucket = await KvBucket.open(bus.admin, Bucket.have);
    const watching = await watchingWants();
    try {
      await wants.put(KEY, want("2-b", "put"));
      await haveBucket.put(KEY, have("2-b", "failing"));
      await wants.put("n2.x", want("1-x"));
      await wants.put(`n2.${MeshPart.assigner}`, want("2-b"));
      await (
        await KvBucket.open(bus.admin, Bucket.have)
      ).put(`n2.${MeshPart.assigner}`, have("2-b", "failing"));
      await marker("m2");
      assert.deepEqual(
        watching.writes.filter((w) => !w.startsWith("m2.")),
        [`${KEY} put 2-b`, "n2.x newest 1-x", `n2.${MeshPart.assigner} newest 2-b`],
        "only the test's own writes",
      );
      assert.equal((await wants.get(`n2.${MeshPart.assigner}`))?.value.rule, "newest");
    } finally {
      watching.stop();
    }
  });
});
