import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ALL, DirtyKeys } from "./dirty.js";

describe("dirty keys", () => {
  const cases: Array<{
    name: string;
    adds: Array<string[] | typeof ALL>;
    all: boolean;
    keys: string[];
  }> = [
    { name: "nothing added: nothing dirty", adds: [], all: false, keys: [] },
    {
      name: "keys added twice are one key",
      adds: [["a", "b"], ["b"]],
      all: false,
      keys: ["a", "b"],
    },
    {
      name: "ALL marks everything, the keys are kept beside it",
      adds: [["a"], ALL],
      all: true,
      keys: ["a"],
    },
    { name: "an empty touch dirties nothing", adds: [[]], all: false, keys: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const dirty = new DirtyKeys(0);
      for (const add of c.adds) dirty.add(add);
      const taken = dirty.take();
      assert.equal(taken.all, c.all);
      assert.deepEqual([...taken.keys].sort(), c.keys);
      const again = dirty.take();
      assert.deepEqual({ all: again.all, keys: [...again.keys] }, { all: false, keys: [] });
    });
  }

  it("a burst of changes within the gathering time wakes a waiter once, with every key", async () => {
    const dirty = new DirtyKeys(50);
    let wakes = 0;
    const waiting = dirty.changed().then(() => (wakes += 1));
    for (let i = 0; i < 1_000; i++) dirty.add([`k${i}`]);
    await waiting;
    assert.equal(wakes, 1);
    assert.equal(dirty.take().keys.size, 1_000);
  });

  it("a waiter that comes while keys are already dirty is woken without a new change", async () => {
    const dirty = new DirtyKeys(0);
    dirty.add(["a"]);
    await dirty.changed();
    assert.deepEqual([...dirty.take().keys], ["a"]);
  });

  it("a waiter whose signal aborts is released with nothing dirty", async () => {
    const dirty = new DirtyKeys(0);
    const stop = new AbortController();
    const waiting = dirty.changed(stop.signal);
    stop.abort();
    await waiting;
    assert.equal(dirty.isDirty, false);
  });

  it("clear forgets what was dirty", () => {
    const dirty = new DirtyKeys(0);
    dirty.add(ALL);
    dirty.clear();
    assert.equal(dirty.isDirty, false);
  });
});
