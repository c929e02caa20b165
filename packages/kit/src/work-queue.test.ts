import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { WorkQueue } from "./work-queue.js";
import { printedBy } from "./test-support.js";

const POLICY = { initialMs: 100, maxMs: 800, jitter: 0 } as const;
const queueOf = <K>(signal = new AbortController().signal) =>
  new WorkQueue<K>({ policy: POLICY, signal });

test("work queue: table of adds and hand-outs", async (t) => {
  const rows: { name: string; adds: string[]; handed: string[] }[] = [
    { name: "one key", adds: ["a"], handed: ["a"] },
    { name: "keys in the order first added", adds: ["b", "a", "c"], handed: ["b", "a", "c"] },
    {
      name: "a key added twice while it waits is handed once",
      adds: ["a", "b", "a"],
      handed: ["a", "b"],
    },
    { name: "nothing added, nothing handed", adds: [], handed: [] },
  ];
  for (const row of rows) {
    await t.test(row.name, async () => {
      const queue = queueOf<string>();
      for (const key of row.adds) queue.add(key);
      const handed: string[] = [];
      while (queue.length > 0) {
        const key = await queue.get();
        assert.ok(key !== undefined);
        handed.push(key);
        queue.done(key);
      }
      assert.deepEqual(handed, row.handed);
    });
  }
});

test("a key added while a worker has it is handed again once the worker is done, not before", async () => {
  const queue = queueOf<string>();
  queue.add("a");
  const first = await queue.get();
  assert.equal(first, "a");
  queue.add("a");
  queue.add("a");
  assert.equal(queue.length, 0, "not waiting while the worker has it");
  queue.done("a");
  assert.equal(queue.length, 1, "waiting again, once");
  assert.equal(await queue.get(), "a");
  queue.done("a");
  assert.equal(queue.length, 0);
});

test("takeWaiting hands every waiting key at once; each is the caller's until done", async () => {
  const queue = queueOf<string>();
  queue.add("a");
  queue.add("b");
  queue.add("c");
  const first = await queue.get();
  assert.equal(first, "a");
  assert.deepEqual(queue.takeWaiting(), ["b", "c"]);
  assert.equal(queue.length, 0);
  assert.deepEqual(queue.takeWaiting(), [], "nothing waits any more");
  queue.add("b");
  assert.equal(queue.length, 0, "b is the caller's: added again, it waits for done");
  for (const key of ["a", "b", "c"]) queue.done(key);
  assert.deepEqual(queue.takeWaiting(), ["b"], "handed again once done, once");
});

test("a worker waiting in get() is handed the next key added", async () => {
  const queue = queueOf<number>();
  const waiting = queue.get();
  queue.add(7);
  assert.equal(await waiting, 7);
});

test("requeue waits the key's own backoff, growing with its failures; forget starts it over", () => {
  const stop = new AbortController();
  const queue = queueOf<string>(stop.signal);
  try {
    assert.deepEqual(
      [queue.requeue("a"), queue.requeue("a"), queue.requeue("a"), queue.requeue("a")],
      [100, 200, 400, 800],
    );
    assert.equal(queue.requeue("b"), 100, "each key has its own backoff");
    assert.equal(queue.failures("a"), 4);
    queue.forget("a");
    assert.equal(queue.failures("a"), 0);
    assert.equal(queue.requeue("a"), 100);
  } finally {
    stop.abort();
  }
});

test("forget resets a key's backoff, whatever its failures before (property)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 30 }), (failures) => {
      const stop = new AbortController();
      const queue = queueOf<string>(stop.signal);
      for (let i = 0; i < failures; i += 1) queue.requeue("k");
      queue.forget("k");
      const first = queue.requeue("k");
      stop.abort();
      return first === POLICY.initialMs && queue.failures("k") === 1;
    }),
  );
});

test("requeueAfter hands the key once its time passed; the sooner of two stands", async () => {
  const stop = new AbortController();
  const queue = queueOf<string>(stop.signal);
  try {
    queue.requeueAfter("a", 600_000);
    queue.requeueAfter("a", 5);
    queue.requeueAfter("a", 300_000);
    assert.equal(queue.length, 0);
    assert.equal(await queue.get(), "a");
    queue.done("a");
    assert.equal(queue.length, 0);
  } finally {
    stop.abort();
  }
});

test("the queue shuts down on its signal: waiting workers and later ones get undefined, adds are dropped, timers cleared", async () => {
  const stop = new AbortController();
  const queue = queueOf<string>(stop.signal);
  const waiting = queue.get();
  queue.requeueAfter("later", 600_000);
  stop.abort();
  assert.equal(await waiting, undefined);
  queue.add("a");
  assert.equal(queue.length, 0);
  assert.equal(await queue.get(), undefined);
  assert.equal(queue.shutDown, true);
});

/** The operations the model test draws. */
type Op =
  | { readonly op: "add"; readonly key: number }
  | { readonly op: "take" }
  | { readonly op: "done"; readonly pick: number };

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("add" as const), key: fc.integer({ min: 0, max: 4 }) }),
    fc.record({ op: fc.constant("take" as const) }),
    fc.record({ op: fc.constant("done" as const), pick: fc.nat() }),
  ),
  { maxLength: 80 },
);

test("no key is handed twice at once, adds coalesce, and no add is lost (model property)", async () => {
  await fc.assert(
    fc.asyncProperty(ops, async (steps: Op[]) => {
      const queue = queueOf<number>();
      const held = new Set<number>();
      // The model: keys waiting, and keys added while held (handed again at done).
      const waiting = new Set<number>();
      const again = new Set<number>();
      for (const step of steps) {
        if (step.op === "add") {
          queue.add(step.key);
          if (held.has(step.key)) again.add(step.key);
          else waiting.add(step.key);
        } else if (step.op === "take") {
          if (queue.length === 0) continue;
          const key = await queue.get();
          assert.ok(key !== undefined);
          assert.ok(!held.has(key), `key ${key} handed while a worker had it`);
          assert.equal(key, [...waiting][0], "handed in the order first added");
          waiting.delete(key);
          held.add(key);
        } else {
          const keys = [...held];
          if (keys.length === 0) continue;
          const key = keys[step.pick % keys.length] as number;
          held.delete(key);
          queue.done(key);
          if (again.delete(key)) waiting.add(key);
        }
        assert.equal(queue.length, waiting.size, "one wait per key, however often it was added");
      }
      // Everything added since it was last handed is handed once more.
      for (const key of [...held]) {
        queue.done(key);
        if (again.delete(key)) waiting.add(key);
      }
      const drained: number[] = [];
      while (queue.length > 0) {
        const key = (await queue.get()) as number;
        drained.push(key);
        queue.done(key);
      }
      assert.deepEqual(drained.sort(), [...waiting].sort());
    }),
    { numRuns: 300 },
  );
});

test("ref: false — a key added later alone does not keep the process alive; by default it does", () => {
  const url = new URL("./work-queue.js", import.meta.url).href;
  const run = (ref: string): string =>
    printedBy([
      `import { WorkQueue } from ${JSON.stringify(url)};`,
      `const queue = new WorkQueue({ policy: { initialMs: 1, maxMs: 1 }, signal: new AbortController().signal${ref} });`,
      `queue.requeueAfter("k", 300);`,
      `void queue.get().then((key) => console.log(key));`,
    ]);
  assert.equal(run(""), "k", "held open until the key was added");
  assert.equal(run(", ref: false"), "", "the process ended before it");
});
