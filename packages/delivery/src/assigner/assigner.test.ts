import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { KvBucket, ensureLayout, readStream, writeCredential } from "@mesh/bus";
import { deadline, destroyBucket } from "@mesh/bus/testing";
import { canonicalJson } from "@mesh/core";
import { Bucket, Condition, Principal, Stream, moduleConditionsWildcard } from "@mesh/protocol";
import { T0, presenceOf } from "./test-fleet.js";
import { assignerBus, startAssignerProcess } from "./test-assigner.js";

const bus = assignerBus();

describe("assigner on a real bus", () => {
  it("makes its first pass once every watch handed what stands: the want it writes first is the final one", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 3, builds: 4 });
    await using a = await bus.startAssigner();
    await a.until(() => a.passes.length >= 1, "the first pass");
    assert.equal(a.passes[0]?.full, true);
    const w = await bus.wants();
    for (const n of ["n1", "n2", "n3"]) {
      const history = await w.history(`${n}.hello`);
      assert.equal(history.length, 1, `${n}: one write, never a want from half the mesh`);
      assert.equal(history[0]?.value?.build, ids[3]);
    }
  });

  it("stops at start, naming the bucket and the grant, when an essential bucket cannot be opened", async () => {
    await bus.freshLayout();
    await bus.seed({ nodes: 1 });
    await destroyBucket(bus.admin, Bucket.composed);
    const a = await bus.startAssigner();
    try {
      await assert.rejects(
        deadline(a.running, 120_000, "the assigner's stop"),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "BUCKET_UNAVAILABLE");
          assert.match(e.message, /mesh-composed/);
          assert.match(e.message, /mesh-assigner\/mesh\.yaml/);
          return true;
        },
      );
      assert.equal(a.assigner.state, "failed");
      assert.deepEqual(await (await bus.wants()).keys(), [], "nothing written from half the mesh");
    } finally {
      await a.stop();
      await ensureLayout(bus.admin);
    }
  });

  it("a burst of 1,000 changes makes a handful of passes, not 1,000", async () => {
    await bus.freshLayout();
    await bus.seed({ nodes: 0 });
    await using a = await bus.startAssigner();
    await a.until(() => a.passes.length >= 1, "the first pass");
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) => presence.put(`b${i}`, presenceOf(`b${i}`))),
    );
    const w = await bus.wants();
    await a.until(
      async () => (await w.keys()).length === 1000,
      "a want on each of the 1,000 nodes",
    );
    const burst = a.passes.length - 1;
    assert.ok(burst >= 1 && burst <= 50, `the burst made ${burst} passes`);
  });

  it("heartbeats (only the presence's time moves) wake no pass and log no line", async () => {
    await bus.freshLayout();
    await bus.seed({ nodes: 3 });
    const lines: string[] = [];
    await using a = await bus.startAssigner({ log: (line) => lines.push(line) });
    await a.until(() => a.passes.length >= 1, "the first pass");
    const before = a.passes.length;
    const logged = lines.length;
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    for (let beat = 1; beat <= 20; beat++)
      for (const node of ["n1", "n2", "n3"])
        await presence.put(node, presenceOf(node, new Date(Date.parse(T0) + beat).toISOString()));
    // The same watch then hands a node arriving, whose want is the sign it was read.
    await presence.put("n9", presenceOf("n9"));
    const w = await bus.wants();
    await a.until(async () => (await w.get("n9.hello")) !== undefined, "n9's want");
    const after = a.passes.slice(before);
    assert.deepEqual(
      after.map((p) => p.nodes),
      after.map(() => 1),
      "every pass after the heartbeats decided n9 alone",
    );
    assert.equal(lines.length - logged, after.length, "one line per pass, none per heartbeat");
  });

  it("without the puts bucket the wants are still written; once it exists a later pass takes puts", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 2 });
    await destroyBucket(bus.admin, Bucket.puts);
    await using a = await bus.startAssigner({ putsReopenIntervalMs: 0 });
    const w = await bus.wants();
    await a.until(
      async () => (await w.get("n1.hello"))?.value.build === ids[1],
      "the newest want without puts",
    );
    assert.equal(a.passes[0]?.puts, false);
    await ensureLayout(bus.admin);
    await (
      await KvBucket.open(bus.admin, Bucket.puts)
    ).put("n1.hello", { build: ids[0] as string, by: "ada", why: "hold", at: T0 });
    // Any change makes a pass (a node arriving; a bare heartbeat is none), and that pass
    // opens the puts again.
    const presence = await KvBucket.open(bus.admin, Bucket.presence);
    await presence.put("n2", presenceOf("n2"));
    await a.until(
      async () => (await w.get("n1.hello"))?.value.rule === "put",
      "the put taken into account",
    );
    assert.equal((await w.get("n1.hello"))?.value.build, ids[0]);
  });

  it("a node that reports the new build failing is set back to its last healthy build, and a condition says so", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 1 });
    await bus.report(ids[0] as string, "healthy");
    await using a = await bus.startAssigner();
    const w = await bus.wants();
    const second = await bus.addBuild(2);
    await a.until(
      async () => (await w.get("n1.hello"))?.value.build === second,
      "the newest build wanted",
    );
    await bus.report(second, "failing");
    await a.until(async () => (await w.get("n1.hello"))?.value.rule === "set-back", "the set-back");
    assert.equal((await w.get("n1.hello"))?.value.build, ids[0]);
    const ac = new AbortController();
    const said = await deadline(
      (async () => {
        for await (const e of readStream(bus.admin, Stream.conditions, {
          filter: moduleConditionsWildcard(Principal.assigner),
          schema: Condition,
          signal: ac.signal,
        })) {
          if (e.type === "message" && e.value.name.startsWith("set-back")) return e.value;
        }
        throw new Error("the conditions stream ended");
      })(),
      20_000,
      "the set-back condition",
    ).finally(() => ac.abort());
    assert.equal(said.node, "n1");
    assert.equal(said.level, "warning");
  });

  it("a set-back said before a restart is resolved by the next assigner once a new build supersedes it", async () => {
    await bus.freshLayout();
    const ids = await bus.seed({ nodes: 1, builds: 2 });
    await bus.report(ids[0] as string, "healthy");
    await bus.report(ids[1] as string, "failing");
    const w = await bus.wants();
    const first = await bus.startAssigner();
    try {
      await first.until(
        async () => (await w.get("n1.hello"))?.value.rule === "set-back",
        "set-back",
      );
      await first.until(
        async () => (await bus.lastCondition("set-back-n1-hello")) !== undefined,
        "said",
      );
      assert.notEqual((await bus.lastCondition("set-back-n1-hello"))?.resolved, true);
    } finally {
      await first.stop();
    }
    const third = await bus.addBuild(3);
    await using second = await bus.startAssigner();
    await second.until(async () => (await w.get("n1.hello"))?.value.build === third, "build 3");
    await second.until(
      async () => (await bus.lastCondition("set-back-n1-hello"))?.resolved === true,
      "the set-back resolved by the assigner that did not say it",
    );
    assert.equal((await bus.lastCondition("set-back-n1-hello"))?.level, "info");
  });

  it("kill -9 of the assigner process and a restart change no want", async () => {
    await bus.freshLayout();
    await bus.seed({ nodes: 5, builds: 2 });
    const dir = await mkdtemp(join(tmpdir(), "mesh-assigner-proc-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, bus.credential(Principal.assigner));
    const w = await bus.wants();
    const standing = async () => {
      const out: Record<string, number> = {};
      for (const key of await w.keys()) out[key] = (await w.get(key))?.revision ?? -1;
      return out;
    };
    const first = startAssignerProcess(credential);
    let second: ReturnType<typeof startAssignerProcess> | undefined;
    try {
      await deadline(first.firstPass, 120_000, "the first process's first pass");
      const before = await standing();
      assert.equal(Object.keys(before).length, 5);
      await first.kill();
      second = startAssignerProcess(credential);
      await deadline(second.firstPass, 120_000, "the restarted process's first pass");
      assert.equal(canonicalJson(await standing()), canonicalJson(before));
      const child = second.child;
      const stopped = new Promise<number | null>((r) => child.once("exit", r));
      process.kill(child.pid as number, "SIGTERM");
      assert.equal(await deadline(stopped, 15_000, "a graceful stop"), 0);
    } finally {
      await first.kill();
      await second?.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
