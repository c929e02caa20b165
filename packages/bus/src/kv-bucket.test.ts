import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  ErrorCode,
  inboxPrefix,
  isMeshError,
  kvStreamName,
  type Permissions,
} from "@mesh/protocol";
import { KvBucket, type WatchEvent } from "./kv-bucket.js";
import { MeshBus } from "./mesh-bus.js";
import { PROMPT_MS, credentialFor, deadline } from "./testing/harness.js";
import { busSuite } from "./testing/fixtures.js";
import { kvBucketSubjects, moduleGrant } from "./testing/grants.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

const WAIT_MS = 5_000;

const Value = z.object({ n: z.number() }).strict();
type Value = z.infer<typeof Value>;

/** A module's grant to use `buckets` as KvBucket opens them. */
const grant = (node: string, module: string, buckets: readonly string[]): Permissions =>
  moduleGrant(
    node,
    module,
    buckets.flatMap((bucket) => kvBucketSubjects(bucket)),
  );

// Buckets of the watch tests: one each, so every test knows exactly what stands in its bucket.
const WATCHED = {
  full: "gamma_full",
  empty: "gamma_empty",
  filter: "gamma_filter",
  history: "gamma_history",
  deletes: "gamma_deletes",
  invalid: "gamma_invalid",
  abort: "gamma_abort",
  writes: "gamma_writes",
  held: "gamma_held",
} as const;

const alpha = { user: "n1-alpha", password: "alpha-pw" };
const gamma = { user: "n1-gamma", password: "gamma-pw" };
const delta = { user: "n1-delta", password: "delta-pw" };
/** A host's kind of grant: the watch of one key, no consumer info, no reads. */
const epsilon = { user: "n1-epsilon", password: "epsilon-pw" };
const watchOneKey = (bucket: string, key: string): Permissions =>
  moduleGrant("n1", "epsilon", [
    `$JS.API.CONSUMER.CREATE.${kvStreamName(bucket)}.*.$KV.${bucket}.${key}`,
    `$JS.FC.${kvStreamName(bucket)}.>`,
  ]);

const users = () => [
  { ...alpha, permissions: grant("n1", "alpha", ["alpha_data"]) },
  { ...gamma, permissions: grant("n1", "gamma", Object.values(WATCHED)) },
];

const fx = busSuite(
  {
    module: "controller",
    users: [
      ...users(),
      { ...delta, permissions: grant("n1", "delta", ["delta_data"]) },
      { ...epsilon, permissions: watchOneKey("epsilon_data", "mine") },
    ],
    setUp: async () => {
      for (const bucket of [
        "alpha_data",
        "beta_data",
        "delta_data",
        "epsilon_data",
        ...Object.values(WATCHED),
      ]) {
        await natsOf(fx.admin).kvm.create(bucket, { history: 5 });
      }
    },
  },
  { before, after },
);

/** The iterator's next value within the deadline; fails when the iteration ended instead. */
async function next<T>(iterator: AsyncIterator<T>, what: string): Promise<T> {
  const result = await deadline(iterator.next(), WAIT_MS, what);
  assert.equal(result.done, false, `the watch ended while waiting for ${what}`);
  return result.value;
}

/** What a test compares: the event without its revision and time. */
function shape(event: WatchEvent<Value>): unknown {
  switch (event.type) {
    case "put":
      return { type: "put", key: event.key, value: event.value };
    case "delete":
      return { type: "delete", key: event.key };
    case "invalid":
      return { type: "invalid", key: event.key, code: event.problem.code };
    case "current":
      return { type: "current" };
  }
}

async function nextShapes(
  iterator: AsyncIterator<WatchEvent<Value>>,
  count: number,
): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) out.push(shape(await next(iterator, `watch event ${i + 1}`)));
  return out;
}

/** A write a watch test makes as the admin: a put of `{ n }`, or without `n` a delete. */
interface Write {
  readonly key: string;
  readonly n?: number;
}
const w = (key: string, n?: number): Write => (n === undefined ? { key } : { key, n });

async function writeAll(writer: KvBucket<Value>, writes: readonly Write[]): Promise<void> {
  for (const { key, n } of writes) {
    if (n === undefined) await writer.delete(key);
    else await writer.put(key, { n });
  }
}

const put = (key: string, n: number) => ({ type: "put", key, value: { n } });
const CURRENT = { type: "current" };

/** What stands before the watch, what it hands up to its marker, then live writes and what it hands of them. */
const WATCH_CASES: ReadonlyArray<{
  readonly name: string;
  readonly bucket: string;
  readonly options?: { readonly key?: string; readonly include?: "history" };
  readonly before: readonly Write[];
  readonly standing: readonly unknown[];
  readonly live: readonly Write[];
  readonly changes: readonly unknown[];
}> = [
  {
    name: "hands the standing values, one current marker, then changes in order",
    bucket: WATCHED.full,
    before: [w("a", 1), w("b", 2), w("a", 3)],
    // The latest value of each key, in the order they were last written.
    standing: [put("b", 2), put("a", 3), CURRENT],
    live: [w("c", 4), w("a", 5), w("b", 6)],
    // No second marker among the changes.
    changes: [put("c", 4), put("a", 5), put("b", 6)],
  },
  {
    name: "hands the marker first, at once, for an empty bucket",
    bucket: WATCHED.empty,
    before: [],
    standing: [CURRENT],
    live: [w("first", 1)],
    changes: [put("first", 1)],
  },
  {
    name: "hands only the keys under its filter",
    bucket: WATCHED.filter,
    options: { key: "n1.*" },
    before: [w("n1.hello", 1), w("n2.hello", 2), w("n1.world", 3)],
    standing: [put("n1.hello", 1), put("n1.world", 3), CURRENT],
    // Delivery is in stream order: were n2.late handed, it would come before n1.late.
    live: [w("n2.late", 4), w("n1.late", 5)],
    changes: [put("n1.late", 5)],
  },
  {
    name: "hands every kept revision before the marker with include: history",
    bucket: WATCHED.history,
    options: { include: "history" },
    before: [w("a", 1), w("a", 2), w("b", 3)],
    standing: [put("a", 1), put("a", 2), put("b", 3), CURRENT],
    live: [w("a", 4)],
    changes: [put("a", 4)],
  },
  {
    name: "hands a delete event for a deleted key, standing or live",
    bucket: WATCHED.deletes,
    before: [w("gone", 1), w("kept", 2), w("gone")],
    // A key whose last word is a delete stands as a delete.
    standing: [put("kept", 2), { type: "delete", key: "gone" }, CURRENT],
    live: [w("kept")],
    changes: [{ type: "delete", key: "kept" }],
  },
];

describe("a credential granted its own inbox and one bucket", () => {
  let bus: MeshBus;
  let own: KvBucket<Value>;
  let other: KvBucket<Value>;

  before(async () => {
    bus = await MeshBus.connect(credentialFor(fx.server, alpha, { node: "n1", module: "alpha" }));
    own = await KvBucket.openWith(bus, "alpha_data", Value);
    other = await KvBucket.openWith(bus, "beta_data", Value);
    const beta = await KvBucket.openWith(fx.admin, "beta_data", Value);
    await beta.put("secret", { n: 42 });
  });
  after(() => bus.close());

  it("uses its own bucket: check, put, get, keys, watch", async () => {
    await own.check();
    await own.put("counter", { n: 1 });
    assert.deepEqual((await own.get("counter"))?.value, { n: 1 });
    assert.deepEqual(await own.keys(), ["counter"]);
    const watch = own.watch();
    try {
      assert.deepEqual(await nextShapes(watch, 2), [
        { type: "put", key: "counter", value: { n: 1 } },
        { type: "current" },
      ]);
    } finally {
      await watch.return(undefined);
    }
  });

  // Each refused at once, and the other bucket's value stays as it was.
  const refusals: ReadonlyArray<readonly [string, string, () => Promise<unknown>]> = [
    ["get on", "get", () => other.get("secret")],
    ["put on", "put", () => other.put("secret", { n: 1 })],
    ["a watch of", "watch", () => other.watch().next()],
    ["keys of", "keys", () => other.keys()],
    ["check of", "check", () => other.check()],
  ];
  for (const [what, op, run] of refusals) {
    it(`is refused ${what} another bucket with PERMISSION_DENIED, promptly`, async () => {
      await assert.rejects(
        deadline(run(), PROMPT_MS, `the ${op} being refused`),
        hasCode(ErrorCode.PERMISSION_DENIED),
      );
      const secret = await (await KvBucket.openWith(fx.admin, "beta_data", Value)).get("secret");
      assert.deepEqual(secret?.value, { n: 42 });
    });
  }

  it("keeps a usable connection after the refusals", async () => {
    assert.equal(bus.isClosed, false);
    await own.put("after", { n: 2 });
    assert.deepEqual((await own.get("after"))?.value, { n: 2 });
  });
});

describe("KvBucket.keysHeld", () => {
  it("lists every key the stream holds, a deleted one's marker too, from the stream's info", async () => {
    const bucket = await KvBucket.openWith(fx.admin, WATCHED.held, z.unknown());
    for (const key of ["b", "a", "c.d"]) await bucket.put(key, { n: 1 });
    await bucket.delete("b");
    const held = await bucket.keysHeld();
    for (const key of ["a", "b", "c.d"]) assert.ok(held.includes(key), key);
    assert.deepEqual(held, [...held].sort());
    assert.equal((await bucket.keys()).includes("b"), false, "keys() leaves the deleted one out");
  });
});

describe("KvBucket.watch", () => {
  let bus: MeshBus;
  /** The watcher's view: the restricted credential that holds the §1.2 grants. */
  const open = (bucket: string) => KvBucket.openWith(bus, bucket, Value);
  /** The writer's view: the admin. */
  const write = (bucket: string) => KvBucket.openWith(fx.admin, bucket, Value);

  before(async () => {
    bus = await MeshBus.connect(credentialFor(fx.server, gamma, { node: "n1", module: "gamma" }));
  });
  after(() => bus.close());

  for (const c of WATCH_CASES) {
    it(c.name, async () => {
      const writer = await write(c.bucket);
      await writeAll(writer, c.before);
      const watch = (await open(c.bucket)).watch(c.options);
      try {
        assert.deepEqual(await nextShapes(watch, c.standing.length), c.standing);
        await writeAll(writer, c.live);
        assert.deepEqual(await nextShapes(watch, c.changes.length), c.changes);
      } finally {
        await watch.return(undefined);
      }
    });
  }

  it("hands an invalid event for a value that breaks the schema, and goes on", async () => {
    const raw = await natsOf(fx.admin).kvm.open(WATCHED.invalid);
    await raw.put("not-json", "{oops");
    await raw.put("wrong-shape", JSON.stringify({ n: "one" }));
    const watch = (await open(WATCHED.invalid)).watch();
    try {
      assert.deepEqual(await nextShapes(watch, 3), [
        { type: "invalid", key: "not-json", code: ErrorCode.INVALID_VALUE },
        { type: "invalid", key: "wrong-shape", code: ErrorCode.INVALID_VALUE },
        { type: "current" },
      ]);
      await raw.put("live-bad", JSON.stringify([]));
      await (await write(WATCHED.invalid)).put("good", { n: 1 });
      assert.deepEqual(await nextShapes(watch, 2), [
        { type: "invalid", key: "live-bad", code: ErrorCode.INVALID_VALUE },
        { type: "put", key: "good", value: { n: 1 } },
      ]);
    } finally {
      await watch.return(undefined);
    }
  });

  it("ends the iteration when its signal aborts, also while it waits", async () => {
    const controller = new AbortController();
    const watch = (await open(WATCHED.abort)).watch({ signal: controller.signal });
    assert.deepEqual(await nextShapes(watch, 1), [{ type: "current" }]);
    const waiting = watch.next();
    controller.abort();
    const result = await deadline(waiting, PROMPT_MS, "the watch ending on abort");
    assert.equal(result.done, true);
    assert.equal((await watch.next()).done, true);
  });

  it("ends the iteration, without an error, when its signal aborts while it starts", async () => {
    const controller = new AbortController();
    const watch = (await open(WATCHED.abort)).watch({ signal: controller.signal });
    // next() runs the generator up to the consumer's creation, which needs a round trip.
    const first = watch.next();
    controller.abort();
    assert.equal((await deadline(first, PROMPT_MS, "the watch ending on abort")).done, true);
  });

  it("hands nothing, without an error, when its signal has already aborted", async () => {
    const watch = (await open(WATCHED.abort)).watch({ signal: AbortSignal.abort() });
    assert.equal((await deadline(watch.next(), PROMPT_MS, "the watch ending")).done, true);
  });
});

describe("a credential granted only the watch of one key", () => {
  it("watches it: the watch asks the server for nothing its grant leaves out", async () => {
    const bus = await MeshBus.connect(
      credentialFor(fx.server, epsilon, { node: "n1", module: "epsilon" }),
    );
    try {
      const writer = await KvBucket.openWith(fx.admin, "epsilon_data", Value);
      await writer.put("mine", { n: 1 });
      const watch = (await KvBucket.openWith(bus, "epsilon_data", Value)).watch({ key: "mine" });
      try {
        assert.deepEqual(await nextShapes(watch, 2), [
          { type: "put", key: "mine", value: { n: 1 } },
          { type: "current" },
        ]);
        await writer.put("other", { n: 2 });
        await writer.put("mine", { n: 3 });
        assert.deepEqual(await nextShapes(watch, 1), [
          { type: "put", key: "mine", value: { n: 3 } },
        ]);
      } finally {
        await watch.return(undefined);
      }
    } finally {
      await bus.close();
    }
  });
});

describe("KvBucket reads and writes", () => {
  let bus: MeshBus;
  let bucket: KvBucket<Value>;

  before(async () => {
    bus = await MeshBus.connect(credentialFor(fx.server, gamma, { node: "n1", module: "gamma" }));
    bucket = await KvBucket.openWith(bus, WATCHED.writes, Value);
  });
  after(() => bus.close());

  it("gets undefined for a key that was never written", async () => {
    assert.equal(await bucket.get("missing"), undefined);
  });

  it("gets undefined for a deleted key", async () => {
    await bucket.put("deleted", { n: 1 });
    await bucket.delete("deleted");
    assert.equal(await bucket.get("deleted"), undefined);
  });

  it("refuses create on a key that has a value with CONFLICT", async () => {
    await bucket.create("once", { n: 1 });
    await assert.rejects(bucket.create("once", { n: 2 }), hasCode(ErrorCode.CONFLICT));
    assert.deepEqual((await bucket.get("once"))?.value, { n: 1 });
  });

  it("refuses update at a stale revision with CONFLICT", async () => {
    const first = await bucket.put("raced", { n: 1 });
    const second = await bucket.update("raced", { n: 2 }, first);
    assert.ok(second > first);
    await assert.rejects(bucket.update("raced", { n: 3 }, first), hasCode(ErrorCode.CONFLICT));
    const now = await bucket.get("raced");
    assert.deepEqual(now?.value, { n: 2 });
    assert.equal(now?.revision, second);
  });

  it("refuses a value that breaks the schema with INVALID_VALUE, and writes nothing", async () => {
    const before = await (await natsOf(fx.admin).kvm.open(WATCHED.writes)).status();
    await assert.rejects(
      bucket.put("bad", { n: "one" } as unknown as Value),
      hasCode(ErrorCode.INVALID_VALUE),
    );
    await assert.rejects(
      bucket.create("bad", { n: 1, extra: true } as unknown as Value),
      hasCode(ErrorCode.INVALID_VALUE),
    );
    assert.equal(await bucket.get("bad"), undefined);
    const after = await (await natsOf(fx.admin).kvm.open(WATCHED.writes)).status();
    assert.equal(after.values, before.values);
  });

  it("refuses to hand a stored value that breaks the schema with INVALID_VALUE", async () => {
    await (await natsOf(fx.admin).kvm.open(WATCHED.writes)).put("stored-bad", "[]");
    await assert.rejects(bucket.get("stored-bad"), (error) =>
      isMeshError(error, ErrorCode.INVALID_VALUE),
    );
  });
});

describe("a watch whose bus closes", () => {
  it("ends quietly", async () => {
    const bus = await MeshBus.connect(
      credentialFor(fx.server, gamma, { node: "n1", module: "gamma" }),
    );
    const watch = (await KvBucket.openWith(bus, WATCHED.abort, Value)).watch();
    assert.deepEqual(await nextShapes(watch, 1), [{ type: "current" }]);
    const waiting = watch.next();
    await bus.close();
    assert.equal((await deadline(waiting, PROMPT_MS, "the watch ending")).done, true);
  });
});

describe("a watch whose grant a reload narrows", () => {
  it("ends with PERMISSION_DENIED when the server drops its subscription, not quietly", async () => {
    const bus = await MeshBus.connect(
      credentialFor(fx.server, delta, { node: "n1", module: "delta" }),
    );
    try {
      const watch = (await KvBucket.openWith(bus, "delta_data", Value)).watch();
      assert.deepEqual(await nextShapes(watch, 1), [{ type: "current" }]);
      // The same grant, but no longer the inbox the watch's deliveries come to.
      const narrowed = grant("n1", "delta", ["delta_data"]);
      await fx.server.setUsers([
        ...users(),
        {
          ...delta,
          permissions: {
            ...narrowed,
            subscribe: { allow: [`${inboxPrefix("n1", "delta")}.none`] },
          },
        },
      ]);
      await assert.rejects(
        deadline(watch.next(), PROMPT_MS, "the watch ending"),
        hasCode(ErrorCode.PERMISSION_DENIED),
      );
    } finally {
      await bus.close();
    }
  });
});
