/**
 * The controller against a real nats-server, with credentials its broker issued and delivered
 * sealed in the nodes' compositions: what each credential may and may not do is what the bus
 * enforces, not what a list says.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  Bucket,
  Condition,
  Credential,
  Stream,
  ErrorCode,
  isMeshError,
  keepsSubject,
  mcpSealContext,
  stateBucket,
  type Composed,
} from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import { KvBucket, MeshBus, readStream, request, requestJoin, unseal } from "@mesh/bus";
import { createBucket, deadline, maySubscribe, publishRaw } from "@mesh/bus/testing";
import { askJoinToken, askMcpCredential, askSecretSet } from "./controller-api.js";
import {
  counter,
  d,
  hello,
  manifest,
  newKeys,
  nodeTools,
  openNeed,
  presenceOf,
  startMesh,
  viewer,
  viewerInput,
  wantOf,
  type Mesh,
} from "./test-support.js";

const denied = (error: unknown): boolean => isMeshError(error, ErrorCode.PERMISSION_DENIED);
const hasNeedSealed = (id: string) => (c: Composed) =>
  c.resources.some((r) => r.id === id && r.type === "need" && r.sealed !== undefined);

describe("the controller with its broker, on a real bus", () => {
  let mesh: Mesh;
  const n1 = newKeys();
  const n2 = newKeys();
  let n1Composed: { value: Composed; revision: number };
  let viewerBus: MeshBus;
  let counterBus: MeshBus;

  before(async () => {
    mesh = await startMesh();
    // A state bucket is made by the controller's side (the admin here), never by a module.
    await createBucket(mesh.admin, stateBucket("counter", "counts"));
    await createBucket(mesh.admin, stateBucket("counter", "private"));
    await createBucket(mesh.admin, stateBucket("viewer", "cache"));
    const counts = await KvBucket.openWith(
      mesh.admin,
      stateBucket("counter", "counts"),
      z.unknown(),
    );
    await counts.put("total", 41);
    const priv = await KvBucket.openWith(
      mesh.admin,
      stateBucket("counter", "private"),
      z.unknown(),
    );
    await priv.put("salt", "s");

    await mesh.put(Bucket.presence, "n1", presenceOf("n1", n1));
    await mesh.put(Bucket.presence, "n2", presenceOf("n2", n2));
    for (const m of [counter, viewer, hello, nodeTools]) await mesh.want("n1", m);
    for (const m of [counter, nodeTools]) await mesh.want("n2", m);
    await mesh.startController();

    n1Composed = await mesh.composed(
      "n1",
      (c) => hasNeedSealed("viewer.need-broker")(c) && hasNeedSealed("node-tools.need-broker")(c),
      "n1's composition with its credentials",
    );
    await mesh.composed("n2", hasNeedSealed("counter.need-broker"), "n2's composition");
    viewerBus = await MeshBus.connect(
      Credential.parse(JSON.parse(openNeed(n1Composed.value, "viewer.need-broker", n1))),
    );
    counterBus = await MeshBus.connect(
      Credential.parse(JSON.parse(openNeed(n1Composed.value, "counter.need-broker", n1))),
    );
  });

  after(async () => {
    await viewerBus?.close();
    await counterBus?.close();
    await mesh?.[Symbol.asyncDispose]();
  });

  it("writes each node's composition with its needs sealed to that node's key only", () => {
    const credential = Credential.parse(
      JSON.parse(openNeed(n1Composed.value, "viewer.need-broker", n1)),
    );
    assert.equal(credential.user, "n1.viewer");
    assert.equal(credential.node, "n1");
    assert.throws(
      () => openNeed(n1Composed.value, "viewer.need-broker", n2),
      (e) => isMeshError(e, ErrorCode.INVALID_VALUE),
    );
    assert.equal(n1Composed.value.modules?.["hello"]?.config["greeting"]?.default, "Hello");
    assert.equal(
      n1Composed.value.modules?.["viewer"]?.bound["read.counter.counts"],
      "counter_counts",
    );
  });

  it("a module reads a state it declared and its owner keeps readable, and cannot write it", async () => {
    const counts = await KvBucket.openWith(
      viewerBus,
      stateBucket("counter", "counts"),
      z.unknown(),
    );
    assert.equal((await counts.get("total"))?.value, 41);
    await assert.rejects(counts.put("total", 0), denied);
  });

  it("a module cannot read an undeclared state, another module's inbox, or another node's composition", async () => {
    const priv = await KvBucket.openWith(viewerBus, stateBucket("counter", "private"), z.unknown());
    await assert.rejects(priv.get("salt"), denied);
    assert.equal(await maySubscribe(viewerBus, "_INBOX.n1.counter.>"), false);
    const composed = await KvBucket.open(viewerBus, Bucket.composed);
    await assert.rejects(composed.get("n2"), denied);
    // Its own state it keeps read-write, as its owner: the counter's daemon writes counts.
    const own = await KvBucket.openWith(counterBus, stateBucket("counter", "counts"), z.unknown());
    await own.put("total", 42);
  });

  it("a runtime serves only its node's modules' tools", async () => {
    const runtime = await MeshBus.connect(
      Credential.parse(JSON.parse(openNeed(n1Composed.value, "node-tools.need-broker", n1))),
    );
    try {
      assert.equal(await maySubscribe(runtime, "mesh.tools.n1.hello.greet"), true);
      assert.equal(await maySubscribe(runtime, "mesh.tools.n1.counter.increment"), true);
      assert.equal(await maySubscribe(runtime, "mesh.tools.n2.hello.greet"), false);
      assert.equal(
        await maySubscribe(runtime, "mesh.tools.n1.viewer.peek"),
        false,
        "viewer has no tools",
      );
    } finally {
      await runtime.close();
    }
  });

  /**
   * Does `act`, then moves n1's facts (its version): n1's pass is the sentinel that the
   * controller went on. Returns the nodes of every pass until then.
   */
  async function passesUntilN1Moves(
    version: string,
    act: () => Promise<void> = () => Promise.resolve(),
  ): Promise<string[][]> {
    const seen: string[][] = [];
    let sentinel: () => void = () => undefined;
    const passed = new Promise<void>((resolve) => (sentinel = resolve));
    const off = mesh.controller.onPass((report) => {
      seen.push([...report.nodes]);
      if (report.nodes.includes("n1")) sentinel();
    });
    try {
      await act();
      await mesh.put(Bucket.presence, "n1", presenceOf("n1", n1, version));
      await deadline(passed, 10_000, "a pass over n1");
      return seen;
    } finally {
      off();
    }
  }

  /** What counter on n2 says it keeps, naming `node` (its own, or not). */
  const keepsOnN2 = (node: string, countsReadable: boolean) => () =>
    publishRaw(
      mesh.admin,
      keepsSubject("n2", "counter"),
      JSON.stringify({
        node,
        module: "counter",
        states: [
          { name: "counts", readable: countsReadable },
          { name: "private", readable: false },
        ],
        at: new Date().toISOString(),
      }),
    );

  it("an unchanged composition is not rewritten: sealed values are reused", async () => {
    const writes = mesh.controller.composedWrites;
    // A presence whose facts moved (its version) recomposes n1; nothing in its composition moves.
    await passesUntilN1Moves("0.1.1");
    assert.equal(mesh.controller.composedWrites, writes);
    const now = await (await KvBucket.open(mesh.admin, Bucket.composed)).get("n1");
    assert.equal(now?.revision, n1Composed.revision);
  });

  it("a keeps report that leaves the owner's states as they were recomposes no node", async () => {
    // counter (wanted on n1 and n2) says on n2 what its manifest declares: nothing moves.
    const seen = await passesUntilN1Moves("0.1.2", keepsOnN2("n2", true));
    assert.deepEqual(
      seen.filter((nodes) => nodes.includes("n2")),
      [],
      "no pass composed n2 for a keeps report that changed nothing",
    );
  });

  it("a keeps report on one process's subject naming another process is ignored", async () => {
    // Said on n2's counter subject, naming n1's counter and its counts unreadable: taken, it
    // would move counter's states and recompose both nodes that run it.
    const seen = await passesUntilN1Moves("0.1.3", keepsOnN2("n1", false));
    assert.deepEqual(
      seen.filter((nodes) => nodes.includes("n2")),
      [],
      "no pass composed n2 for a keeps report naming another process",
    );
  });

  it("a secret set through the controller reaches the node sealed, and the operator cannot read mesh-secrets", async () => {
    const operator = await MeshBus.connect(mesh.operator);
    try {
      await askSecretSet(operator, { module: "hello", name: "api-token", value: "t0ps3cret" });
      const composed = await mesh.composed(
        "n1",
        hasNeedSealed("hello.need-api-token"),
        "the secret on n1",
      );
      assert.equal(openNeed(composed.value, "hello.need-api-token", n1), "t0ps3cret");
      const secrets = await KvBucket.open(operator, Bucket.secrets);
      await assert.rejects(secrets.get("hello.api-token"), denied);
      const stored = await (await KvBucket.open(mesh.admin, Bucket.secrets)).get("hello.api-token");
      assert.ok(stored !== undefined && !JSON.stringify(stored.value).includes("t0ps3cret"));
      n1Composed = composed;
    } finally {
      await operator.close();
    }
  });

  /** The first condition the controller says about n1 that `match` accepts. */
  const conditionOfN1 = async (
    match: (condition: Condition) => boolean,
    signal: AbortSignal,
  ): Promise<Condition> => {
    for await (const e of readStream(mesh.admin, Stream.conditions, {
      filter: "mesh.conditions.controller.n1",
      schema: Condition,
      // The last one kept and every new one: a condition said before the read began counts.
      deliver: "last-per-subject",
      signal,
    })) {
      if (e.type === "message" && match(e.value)) return e.value;
    }
    throw new Error("the conditions ended");
  };

  it("a refusal writes nothing new for the node and says a condition with the reason", async () => {
    const before = await (await KvBucket.open(mesh.admin, Bucket.composed)).get("n1");
    const stop = new AbortController();
    const said = conditionOfN1((c) => c.message.includes("ghost"), stop.signal);
    // A want whose manifest was never stored: n1 cannot be composed.
    await mesh.put(Bucket.wants, "n1.ghost", { ...wantOf(hello), manifestDigest: d("9e") });
    try {
      const condition = await deadline(said, 10_000, "the controller's condition about n1");
      assert.equal(condition.level, "error");
      assert.match(condition.message, /manifest-missing/);
    } finally {
      stop.abort();
    }
    const after = await (await KvBucket.open(mesh.admin, Bucket.composed)).get("n1");
    assert.equal(after?.revision, before?.revision, "what n1 runs stays as it is");
    await (await KvBucket.open(mesh.admin, Bucket.wants)).delete("n1.ghost");
    // Its cause gone, the controller resolves it: the same subject, so it replaces the refusal.
    const resolving = new AbortController();
    const resolved = conditionOfN1((c) => c.resolved === true, resolving.signal);
    try {
      const condition = await deadline(resolved, 30_000, "the refusal about n1 resolved");
      assert.equal(condition.message, "n1 is composed");
    } finally {
      resolving.abort();
    }
  });

  it("writes mesh-grants for each issued user, never a password", async () => {
    const grants = await KvBucket.open(mesh.admin, Bucket.grants);
    const keys = await grants.keys();
    for (const key of ["n1.viewer", "n1.counter", "n1.node-tools", "n2.counter", "n2.node-tools"]) {
      assert.ok(keys.includes(key), key);
    }
    const viewerGrant = await grants.get("n1.viewer");
    assert.equal(viewerGrant?.value.user, "n1.viewer");
    const password = Credential.parse(
      JSON.parse(openNeed(n1Composed.value, "viewer.need-broker", n1)),
    ).password;
    assert.ok(password !== undefined && !JSON.stringify(viewerGrant?.value).includes(password));
  });

  it("a grant change reaches the server without a restart; unaffected connections keep working", async () => {
    const pid = mesh.server.pid;
    const reloaded = new Promise<void>((resolve) => {
      const off = mesh.controller.onPass((report) => {
        if (report.reloaded) {
          off();
          resolve();
        }
      });
    });
    // The counter's daemon watches its own state across the reload: it must keep receiving.
    const own = await KvBucket.openWith(counterBus, stateBucket("counter", "counts"), z.unknown());
    const stop = new AbortController();
    const seen: unknown[] = [];
    let sawAfter: () => void = () => undefined;
    const after = new Promise<void>((resolve) => (sawAfter = resolve));
    const watching = (async () => {
      for await (const e of own.watch({ key: "after", signal: stop.signal, include: "updates" })) {
        if (e.type === "put") {
          seen.push(e.value);
          sawAfter();
        }
      }
    })().catch(() => undefined);

    // viewer's new build reads nothing: its grant narrows.
    const narrower = manifest({ ...viewerInput, reads: [] });
    await mesh.want("n1", narrower, "2-test");
    await deadline(reloaded, 10_000, "the reload for viewer's new grant");

    const counts = await KvBucket.openWith(
      viewerBus,
      stateBucket("counter", "counts"),
      z.unknown(),
    );
    await assert.rejects(counts.get("total"), denied, "the live connection lost the read");
    assert.equal(mesh.server.server.pid, pid);
    assert.doesNotThrow(() => process.kill(pid, 0), "the same server process runs");

    const writer = await KvBucket.openWith(
      counterBus,
      stateBucket("counter", "counts"),
      z.unknown(),
    );
    await writer.put("after", "reload");
    await deadline(after, 10_000, "the unaffected watch receiving after the reload");
    assert.deepEqual(seen, ["reload"]);
    stop.abort();
    await watching;
    assert.equal(fingerprintOf(narrower) === fingerprintOf(viewer), false);
  });

  it("a set-back (the want moves to another build of the module) keeps its user, password and live connection", async () => {
    const before = mesh.controller.broker.get("n1.counter");
    assert.ok(before, "n1.counter is issued");
    // The set-back's build: a build id of its own, as the assigner writes it.
    await mesh.want("n1", counter, "0-setback");
    await mesh.composed(
      "n1",
      (c) => c.modules?.["counter"]?.build === "0-setback",
      "n1 composed with the set-back build",
    );
    const after = mesh.controller.broker.get("n1.counter");
    assert.equal(after?.passwordHash, before.passwordHash, "the same password: nothing to restart");
    const own = await KvBucket.openWith(counterBus, stateBucket("counter", "counts"), z.unknown());
    await own.put("set-back", "still connected");
    assert.equal((await own.get("set-back"))?.value, "still connected");
  });

  it("a module no longer wanted loses its user and its grant, and the bus drops and refuses its connection", async () => {
    const revoked = new Promise<void>((resolve) => {
      const off = mesh.controller.onPass((report) => {
        if (report.reloaded && mesh.controller.broker.get("n1.viewer") === undefined) {
          off();
          resolve();
        }
      });
    });
    // The connection retries a refused login forever (a restarted bus may know a user late), so
    // what shows the revocation is the bus dropping it and refusing it when it comes back.
    const events = viewerBus.events();
    const refused = (async () => {
      let dropped = false;
      for await (const event of events) {
        if (event.type === "disconnected") dropped = true;
        if (dropped && event.type === "error" && /authorization/i.test(event.error.message)) return;
      }
    })();
    await (await KvBucket.open(mesh.admin, Bucket.wants)).delete("n1.viewer");
    await deadline(revoked, 10_000, "the reload without n1.viewer");
    assert.equal(
      await (await KvBucket.open(mesh.admin, Bucket.grants)).get("n1.viewer"),
      undefined,
    );
    await deadline(refused, 10_000, "the server dropping and refusing the revoked user");
    await events.return(undefined);
    await viewerBus.close();
  });

  it("a restarted controller keeps its users and writes nothing that did not change", async () => {
    await mesh.controller.stop();
    const before = await (await KvBucket.open(mesh.admin, Bucket.composed)).get("n1");
    const controller = await mesh.startController();
    assert.equal(controller.broker.hashesMade, 0, "no password was made or hashed again");
    assert.equal(controller.composedWrites, 0);
    const after = await (await KvBucket.open(mesh.admin, Bucket.composed)).get("n1");
    assert.equal(after?.revision, before?.revision);
  });

  it("joins a node with a one-time token: its host credential arrives sealed to its key", async () => {
    const operator = await MeshBus.connect(mesh.operator);
    try {
      const { token } = await askJoinToken(operator, {});
      const keys = newKeys();
      const credential = await requestJoin({
        servers: [mesh.server.url],
        token,
        node: "n9",
        keys,
      });
      assert.equal(credential.user, "n9.host");
      const host = await MeshBus.connect(credential);
      try {
        const composed = await KvBucket.open(host, Bucket.composed);
        assert.equal(
          await composed.get("n9"),
          undefined,
          "its own composition: readable (none yet)",
        );
        await assert.rejects(composed.get("n1"), denied, "another node's composition");
      } finally {
        await host.close();
      }
      await assert.rejects(
        requestJoin({ servers: [mesh.server.url], token, node: "n10", keys: newKeys() }),
        (e) => isMeshError(e),
        "a token works once",
      );

      const second = await askJoinToken(operator, { ttlSeconds: 60 });
      await assert.rejects(
        requestJoin({
          servers: [mesh.server.url],
          token: second.token,
          node: "n1",
          keys: newKeys(),
        }),
        (e) => isMeshError(e, ErrorCode.REFUSED),
        "a taken node name",
      );
      // The refusal for a taken name does not spend the token.
      const joined = await requestJoin({
        servers: [mesh.server.url],
        token: second.token,
        node: "n11",
        keys: newKeys(),
      });
      assert.equal(joined.user, "n11.host");
    } finally {
      await operator.close();
    }
  });
  it("issues mesh mcp --allow's credential into the users list, held to its modules by the server", async () => {
    await using operator = await MeshBus.connect(mesh.operator);
    const keys = newKeys();
    const ask = { modules: ["hello"], publicKey: keys.publicKey };
    const answer = await askMcpCredential(operator, ask, { timeoutMs: 30_000 });
    const opened = unseal(keys.privateKey, answer.sealed, mcpSealContext(answer.principal));
    const credential = Credential.parse(JSON.parse(opened.toString()));
    assert.ok(credential.password !== undefined, "a users-list login");
    await using mcp = await MeshBus.connect(credential);
    // Granted, nothing serves it here: no responders. Not granted: the server refuses.
    await assert.rejects(request(mcp, "mesh.tools.n1.hello.greet", {}), (e: unknown) =>
      isMeshError(e, ErrorCode.NOT_FOUND),
    );
    await assert.rejects(request(mcp, "mesh.tools.n1.counter.add", {}), denied);
  });
});
