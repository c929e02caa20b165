import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, ensureLayout, readStream, writeCredential } from "@mesh/bus";
import {
  credentialFor,
  deadline,
  destroyBucket,
  startTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import { assignerGrant, canonicalJson, operatorGrant } from "@mesh/core";
import {
  Bucket,
  Condition,
  Principal,
  Stream,
  moduleConditionsWildcard,
  type Want,
} from "@mesh/protocol";
import { Assigner, type PassReport } from "./assigner.js";
import { NODE, T0, addHelloBuild, emptyLayout, presenceOf, seedFleet } from "./test-fleet.js";

let server: TestServer;
let admin: MeshBus;
const password = "assigner-password-for-tests";

before(async () => {
  server = await startTestServer({
    users: [
      { user: "assigner", password, permissions: assignerGrant({ node: NODE }) },
      { user: "operator", password, permissions: operatorGrant({ node: NODE }) },
    ],
  });
  admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: NODE, module: "controller" }),
  );
});
after(async () => {
  await admin?.close();
  await server?.stop();
});

const assignerCredential = () =>
  credentialFor(server, { user: "assigner", password }, { node: NODE, module: Principal.assigner });

const freshLayout = (): Promise<void> => emptyLayout(admin);
const seed = (options: { nodes: number; builds?: number }): Promise<string[]> =>
  seedFleet(admin, options);
const addBuild = (seq: number): Promise<string> => addHelloBuild(admin, seq);

/** Runs an assigner in this process until the returned stop is called. */
async function startAssigner(
  options: { putsReopenIntervalMs?: number; log?: (line: string) => void } = {},
) {
  const bus = await MeshBus.connect(assignerCredential());
  const passes: PassReport[] = [];
  const waiters: Array<() => void> = [];
  const assigner = await Assigner.create({
    bus,
    ...(process.env.MESH_TEST_LOG === "1" ? { log: (l: string) => console.error(l) } : {}),
    ...options,
    onPass: (p) => {
      passes.push(p);
      for (const w of waiters.splice(0)) w();
    },
  });
  const stop = new AbortController();
  const running = assigner.run({ signal: stop.signal });
  running.catch(() => undefined);
  return {
    assigner,
    passes,
    running,
    /** Resolves once a pass satisfies `test` (checked after each pass). */
    async until(test: () => Promise<boolean> | boolean, what: string): Promise<void> {
      await deadline(
        (async () => {
          // The waiter is registered before the check, so a pass that ends while the check
          // reads the bus still wakes it (registering after the check lost that wake-up).
          for (;;) {
            const passed = new Promise<void>((r) => waiters.push(r));
            if (await test()) return;
            await passed;
          }
        })(),
        // Generous: a deadline catches a hang, never a slow machine.
        180_000,
        what,
      );
    },
    async stop() {
      stop.abort();
      await running.catch(() => undefined);
      await bus.close();
    },
  };
}

const wants = () => KvBucket.open(admin, Bucket.wants);

/** The last condition the assigner said under a name, as the stream keeps it. */
async function lastCondition(name: string): Promise<Condition | undefined> {
  const ac = new AbortController();
  let last: Condition | undefined;
  try {
    for await (const e of readStream(admin, Stream.conditions, {
      filter: `${moduleConditionsWildcard(Principal.assigner).slice(0, -1)}${name}`,
      schema: Condition,
      deliver: "last-per-subject",
      signal: ac.signal,
    })) {
      if (e.type === "current") break;
      if (e.type === "message") last = e.value;
    }
  } finally {
    ac.abort();
  }
  return last;
}

/** Starts `mesh assigner` as its own process on the assigner's credential file. */
function startAssignerProcess(credential: string) {
  const main = fileURLToPath(new URL("../main.js", import.meta.url));
  const child = spawn(process.execPath, [main, "assigner", "--credential", credential], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const lines = createInterface({ input: child.stderr });
  const firstPass = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => {
      if (/pass 1:/.test(line)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the assigner exited with ${code}`)));
  });
  firstPass.catch(() => undefined);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    child,
    firstPass,
    /** Stops it by its pid (SIGKILL: nothing of it is left to run). */
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid as number, "SIGKILL");
      }
      await exited;
    },
  };
}

describe("assigner on a real bus", () => {
  it("makes its first pass once every watch handed what stands: the want it writes first is the final one", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 3, builds: 4 });
    const a = await startAssigner();
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      assert.equal(a.passes[0]?.full, true);
      const w = await wants();
      for (const n of ["n1", "n2", "n3"]) {
        const history = await w.history(`${n}.hello`);
        assert.equal(history.length, 1, `${n}: one write, never a want from half the mesh`);
        assert.equal(history[0]?.value?.build, ids[3]);
      }
    } finally {
      await a.stop();
    }
  });

  it("stops at start, naming the bucket and the grant, when an essential bucket cannot be opened", async () => {
    await freshLayout();
    await seed({ nodes: 1 });
    await destroyBucket(admin, Bucket.composed);
    const a = await startAssigner();
    try {
      await assert.rejects(
        deadline(a.running, 120_000, "the assigner's stop"),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "BUCKET_UNAVAILABLE");
          assert.match(e.message, /mesh-composed/);
          assert.match(e.message, /assignerGrant/);
          return true;
        },
      );
      assert.equal(a.assigner.state, "failed");
      assert.deepEqual(await (await wants()).keys(), [], "nothing written from half the mesh");
    } finally {
      await a.stop();
      await ensureLayout(admin);
    }
  });

  it("a burst of 1,000 changes makes a handful of passes, not 1,000", async () => {
    await freshLayout();
    await seed({ nodes: 0 });
    const a = await startAssigner();
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      const presence = await KvBucket.open(admin, Bucket.presence);
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) => presence.put(`b${i}`, presenceOf(`b${i}`))),
      );
      const w = await wants();
      await a.until(
        async () => (await w.keys()).length === 1000,
        "a want on each of the 1,000 nodes",
      );
      const burst = a.passes.length - 1;
      assert.ok(burst >= 1 && burst <= 50, `the burst made ${burst} passes`);
    } finally {
      await a.stop();
    }
  });

  it("heartbeats (only the presence's time moves) wake no pass and log no line", async () => {
    await freshLayout();
    await seed({ nodes: 3 });
    const lines: string[] = [];
    const a = await startAssigner({ log: (line) => lines.push(line) });
    try {
      await a.until(() => a.passes.length >= 1, "the first pass");
      const before = a.passes.length;
      const logged = lines.length;
      const presence = await KvBucket.open(admin, Bucket.presence);
      for (let beat = 1; beat <= 20; beat++)
        for (const node of ["n1", "n2", "n3"])
          await presence.put(node, presenceOf(node, new Date(Date.parse(T0) + beat).toISOString()));
      // The same watch then hands a node arriving, whose want is the sign it was read.
      await presence.put("n9", presenceOf("n9"));
      const w = await wants();
      await a.until(async () => (await w.get("n9.hello")) !== undefined, "n9's want");
      const after = a.passes.slice(before);
      assert.deepEqual(
        after.map((p) => p.nodes),
        after.map(() => 1),
        "every pass after the heartbeats decided n9 alone",
      );
      assert.equal(lines.length - logged, after.length, "one line per pass, none per heartbeat");
    } finally {
      await a.stop();
    }
  });

  it("without the puts bucket the wants are still written; once it exists a later pass takes puts", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 1, builds: 2 });
    await destroyBucket(admin, Bucket.puts);
    const a = await startAssigner({ putsReopenIntervalMs: 0 });
    try {
      const w = await wants();
      await a.until(
        async () => (await w.get("n1.hello"))?.value.build === ids[1],
        "the newest want without puts",
      );
      assert.equal(a.passes[0]?.puts, false);
      await ensureLayout(admin);
      await (
        await KvBucket.open(admin, Bucket.puts)
      ).put("n1.hello", { build: ids[0] as string, by: "ada", why: "hold", at: T0 });
      // Any change makes a pass (a node arriving; a bare heartbeat is none), and that pass
      // opens the puts again.
      const presence = await KvBucket.open(admin, Bucket.presence);
      await presence.put("n2", presenceOf("n2"));
      await a.until(
        async () => (await w.get("n1.hello"))?.value.rule === "put",
        "the put taken into account",
      );
      assert.equal((await w.get("n1.hello"))?.value.build, ids[0]);
    } finally {
      await a.stop();
    }
  });

  it("a node that reports the new build failing is set back to its last healthy build, and a condition says so", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 1, builds: 1 });
    const have = await KvBucket.open(admin, Bucket.have);
    const report = (build: string, health: "healthy" | "failing") =>
      have.put("n1.hello", { build, fingerprint: "f", health, since: T0, restarts: 0 });
    await report(ids[0] as string, "healthy");
    const a = await startAssigner();
    try {
      const w = await wants();
      const second = await addBuild(2);
      await a.until(
        async () => (await w.get("n1.hello"))?.value.build === second,
        "the newest build wanted",
      );
      await report(second, "failing");
      await a.until(
        async () => (await w.get("n1.hello"))?.value.rule === "set-back",
        "the set-back",
      );
      assert.equal((await w.get("n1.hello"))?.value.build, ids[0]);
      const ac = new AbortController();
      const said = await deadline(
        (async () => {
          for await (const e of readStream(admin, Stream.conditions, {
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
    } finally {
      await a.stop();
    }
  });

  it("a set-back said before a restart is resolved by the next assigner once a new build supersedes it", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 1, builds: 2 });
    const have = await KvBucket.open(admin, Bucket.have);
    const report = (build: string, health: "healthy" | "failing") =>
      have.put("n1.hello", { build, fingerprint: "f", health, since: T0, restarts: 0 });
    await report(ids[0] as string, "healthy");
    await report(ids[1] as string, "failing");
    const w = await wants();
    const first = await startAssigner();
    try {
      await first.until(
        async () => (await w.get("n1.hello"))?.value.rule === "set-back",
        "set-back",
      );
      await first.until(
        async () => (await lastCondition("set-back-n1-hello")) !== undefined,
        "said",
      );
      assert.notEqual((await lastCondition("set-back-n1-hello"))?.resolved, true);
    } finally {
      await first.stop();
    }
    const third = await addBuild(3);
    const second = await startAssigner();
    try {
      await second.until(async () => (await w.get("n1.hello"))?.value.build === third, "build 3");
      await second.until(
        async () => (await lastCondition("set-back-n1-hello"))?.resolved === true,
        "the set-back resolved by the assigner that did not say it",
      );
      assert.equal((await lastCondition("set-back-n1-hello"))?.level, "info");
    } finally {
      await second.stop();
    }
  });

  it("kill -9 of the assigner process and a restart change no want", async () => {
    await freshLayout();
    await seed({ nodes: 5, builds: 2 });
    const dir = await mkdtemp(join(tmpdir(), "mesh-assigner-proc-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, assignerCredential());
    const w = await wants();
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

describe("assigner on a real bus: failed marks and puts (issue 14)", () => {
  it("a first build that fails stays wanted, failing, with the fix in its reason; a new build is wanted at once", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 1, builds: 1 });
    const have = await KvBucket.open(admin, Bucket.have);
    const a = await startAssigner();
    try {
      const w = await wants();
      await a.until(async () => (await w.get("n1.hello"))?.value.build === ids[0], "the want");
      await have.put("n1.hello", {
        build: ids[0],
        fingerprint: "f",
        health: "failing",
        since: T0,
        restarts: 3,
        lastError: "exited with 1",
      });
      const differences = await KvBucket.open(admin, Bucket.differences);
      await a.until(
        async () => /failing/.test((await differences.get("n1.hello"))?.value.reasons.join() ?? ""),
        "the difference saying it fails",
      );
      const kept = (await w.get("n1.hello"))?.value;
      assert.equal(kept?.build, ids[0], "still wanted: the host goes on restarting it");
      assert.match(kept?.reason ?? "", /mesh retry hello --node n1/);
      const second = await addBuild(2);
      await a.until(async () => (await w.get("n1.hello"))?.value.build === second, "a new build");
    } finally {
      await a.stop();
    }
  });

  it("an operator's retry (on the operator's own grant) lifts a set-back: the newest is wanted again", async () => {
    await freshLayout();
    const ids = await seed({ nodes: 1, builds: 2 });
    const have = await KvBucket.open(admin, Bucket.have);
    const report = (build: string, health: "healthy" | "failing") =>
      have.put("n1.hello", { build, fingerprint: "f", health, since: T0, restarts: 0 });
    await report(ids[0] as string, "healthy");
    const failedAt = await report(ids[1] as string, "failing");
    const a = await startAssigner();
    const operator = await MeshBus.connect(
      credentialFor(
        server,
        { user: "operator", password },
        { node: NODE, module: Principal.operator },
      ),
    );
    try {
      const w = await wants();
      await a.until(async () => (await w.get("n1.hello"))?.value.rule === "set-back", "set-back");
      const retries = await KvBucket.open(operator, Bucket.retries);
      await retries.put("n1.hello", { haveRevision: failedAt, by: "ada", why: "fixed", at: T0 });
      await a.until(
        async () => (await w.get("n1.hello"))?.value.build === ids[1],
        "the newest wanted again after the retry",
      );
      assert.equal((await w.get("n1.hello"))?.value.rule, "newest");
      await report(ids[1] as string, "failing");
      await a.until(
        async () => (await w.get("n1.hello"))?.value.rule === "set-back",
        "a failure after the retry sets it back again",
      );
    } finally {
      await operator.close();
      await a.stop();
    }
  });
});

describe("assigner on a real bus: a restart never undoes a put (issue 14)", () => {
  it("killing and restarting the assigner with 3,000 puts never writes a want a put contradicts", async () => {
    await freshLayout();
    const nodes = 300;
    const ids = await seed({ nodes, builds: 2 });
    const older = ids[0] as string;
    const puts = await KvBucket.open(admin, Bucket.puts);
    const put = { build: older, by: "ada", why: "hold", at: T0 };
    // Every present node put to the older build, and 2,700 puts of modules nowhere assigned.
    await Promise.all(Array.from({ length: nodes }, (_, i) => puts.put(`n${i + 1}.hello`, put)));
    await Promise.all(Array.from({ length: 2700 }, (_, i) => puts.put(`x${i}.other`, put)));
    const dir = await mkdtemp(join(tmpdir(), "mesh-assigner-puts-"));
    const credential = join(dir, "assigner.json");
    await writeCredential(credential, assignerCredential());
    const w = await wants();
    const running: Array<ReturnType<typeof startAssignerProcess>> = [];
    const seen: string[] = [];
    const ac = new AbortController();
    try {
      const first = startAssignerProcess(credential);
      running.push(first);
      await deadline(first.firstPass, 180_000, "the first process's first pass");
      for (const key of await w.keys()) assert.equal((await w.get(key))?.value.build, older, key);
      // Every write to the wants from here on, as it happens; a sentinel key written last marks
      // where the writes to look at end (the watch hands them in the order they were made).
      const SENTINEL = "sentinel.hello";
      let listening!: () => void;
      const heard = new Promise<void>((r) => (listening = r));
      let sentinel!: () => void;
      const sentinelSeen = new Promise<void>((r) => (sentinel = r));
      const watching = (async () => {
        for await (const e of w.watch({ signal: ac.signal, include: "updates" })) {
          if (e.type === "current") listening();
          else if (e.key === SENTINEL) sentinel();
          else if (e.type !== "put" || e.value.build !== older) seen.push(`${e.key} ${e.type}`);
        }
      })().catch(() => undefined);
      await deadline(heard, 60_000, "the watch of the wants");
      for (let round = 0; round < 3; round++) {
        const before = running.pop();
        await before?.kill();
        const next = startAssignerProcess(credential);
        running.push(next);
        await deadline(next.firstPass, 180_000, `restart ${round + 1}'s first pass`);
      }
      await w.put(SENTINEL, (await w.get("n1.hello"))?.value as Want);
      await deadline(sentinelSeen, 60_000, "the sentinel written after the last first pass");
      ac.abort();
      await watching;
      assert.deepEqual(seen, [], "no want ever moved off the put");
      const keys = (await w.keys()).filter((k) => k !== SENTINEL);
      assert.equal(keys.length, nodes, "a want on every node, all still the put's");
    } finally {
      ac.abort();
      for (const p of running) await p.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
