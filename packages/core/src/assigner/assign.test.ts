import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assign, askId } from "./assign.js";
import {
  assignTo,
  build,
  manifestOf,
  present,
  put,
  reportHave,
  retry,
  snapshot,
  wantOf,
  helloEverywhere,
  pass,
  newBuildAfterHealthy,
} from "./fixtures.js";

describe("assign: the rules, each in its place", () => {
  it("placed: nothing is wanted without an assignment", () => {
    const s = snapshot();
    present(s, "n1");
    build(s, "hello", 1);
    const r = pass(s);
    assert.equal(wantOf(r, "n1", "hello"), undefined);
    assert.equal(r.unwanted.get("n1.hello")?.rule, "placed");
  });

  it("placed: nothing is wanted on a node that has not been present", () => {
    const s = snapshot();
    assignTo(s, "n2", "hello");
    build(s, "hello", 1);
    const r = pass(s, ["n2"]);
    assert.equal(wantOf(r, "n2", "hello"), undefined);
    assert.equal(r.unwanted.get("n2.hello")?.rule, "placed");
  });

  it("placed: a node assignment and an all assignment both place", () => {
    const s = snapshot();
    present(s, "n1");
    present(s, "n2");
    assignTo(s, "n1", "hello");
    assignTo(s, "all", "world");
    build(s, "hello", 1);
    build(s, "world", 1);
    const r = pass(s);
    assert.ok(wantOf(r, "n1", "hello"));
    assert.equal(wantOf(r, "n2", "hello"), undefined);
    assert.ok(wantOf(r, "n1", "world"));
    assert.ok(wantOf(r, "n2", "world"));
  });

  it("built: an unbuilt module is not wanted", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1, { status: "building" });
    const r = pass(s);
    assert.equal(wantOf(r, "n1", "hello"), undefined);
    assert.equal(r.unwanted.get("n1.hello")?.rule, "built");
  });

  it("built: a failed build is never wanted; the last good one stays", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    const b2 = build(s, "hello", 2, { status: "failed" });
    const r = pass(s);
    assert.equal(wantOf(r, "n1", "hello")?.build, b1);
    assert.match(wantOf(r, "n1", "hello")?.reason ?? "", new RegExp(`${b2} failed`));
  });

  it("built: a built record whose manifest is not stored is not wanted", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1);
    s.manifests.clear();
    assert.equal(wantOf(pass(s), "n1", "hello"), undefined);
  });

  it("newest: a newer build is wanted, with rule and reason", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1);
    assert.equal(wantOf(pass(s), "n1", "hello")?.rule, "newest");
    const b2 = build(s, "hello", 2);
    const w = wantOf(pass(s), "n1", "hello");
    assert.equal(w?.build, b2);
    assert.equal(w?.rule, "newest");
    assert.match(w?.reason ?? "", /candidate 2/);
  });

  it("put: pins one node, other nodes keep the newest", () => {
    const s = helloEverywhere("n1", "n2");
    const b1 = build(s, "hello", 1);
    const b2 = build(s, "hello", 2);
    put(s, "n1", "hello", b1);
    const r = pass(s);
    assert.equal(wantOf(r, "n1", "hello")?.build, b1);
    assert.equal(wantOf(r, "n1", "hello")?.rule, "put");
    assert.equal(wantOf(r, "n2", "hello")?.build, b2);
  });

  it("put: everywhere; the node's own put wins over all", () => {
    const s = helloEverywhere("n1", "n2");
    const b1 = build(s, "hello", 1);
    const b2 = build(s, "hello", 2);
    const b3 = build(s, "hello", 3);
    put(s, "all", "hello", b1);
    put(s, "n2", "hello", b2);
    const r = pass(s);
    assert.equal(wantOf(r, "n1", "hello")?.build, b1);
    assert.equal(wantOf(r, "n2", "hello")?.build, b2);
    s.puts.clear();
    assert.equal(
      wantOf(pass(s), "n1", "hello")?.build,
      b3,
      "lifting the put returns to the newest",
    );
  });

  it("put: a put to a failed build is not honoured, and says so", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    const b2 = build(s, "hello", 2, { status: "failed" });
    put(s, "all", "hello", b2);
    const w = wantOf(pass(s), "n1", "hello");
    assert.equal(w?.build, b1);
    assert.match(w?.reason ?? "", /not honoured/);
  });

  it("set-back: a build a node reported failing goes back to the last healthy one, with a condition", () => {
    const { s, b1, b2 } = newBuildAfterHealthy("n1", "n2");
    pass(s);
    reportHave(s, "n1", "hello", b2, "starting");
    reportHave(s, "n1", "hello", b2, "failing");
    const r = pass(s);
    const w = wantOf(r, "n1", "hello");
    assert.equal(w?.build, b1);
    assert.equal(w?.rule, "set-back");
    assert.equal(wantOf(r, "n2", "hello")?.build, b2, "only the node that failed is set back");
    assert.equal(r.conditions.filter((c) => c.name.startsWith("set-back")).length, 1);
    assert.equal(assign(s).conditions.length, 0, "said once, when written");
  });

  it("set-back: with no healthy build to go back to the failing build stays wanted, saying why and what fixes it", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    reportHave(s, "n1", "hello", b1, "failing");
    const r = pass(s);
    const w = wantOf(r, "n1", "hello");
    assert.equal(w?.build, b1, "a first build that fails stays wanted (the host retries it)");
    assert.equal(w?.rule, "newest");
    assert.match(w?.reason ?? "", /failing/);
    assert.match(w?.reason ?? "", /mesh retry hello --node n1/);
    assert.match(r.differences.get("n1.hello")?.reasons.join(" ") ?? "", /failing/);
    assert.deepEqual(
      r.conditions.map((c) => [c.name, c.level]),
      [["failing-n1-hello", "warning"]],
      "said as a condition when the want first says it",
    );
    assert.deepEqual(assign(s).conditions, [], "said once");
  });

  it("set-back: a retry lifts the mark, so the newest is wanted again; a new failure marks it again", () => {
    const { s, b2 } = newBuildAfterHealthy("n1");
    reportHave(s, "n1", "hello", b2, "failing");
    assert.equal(wantOf(pass(s), "n1", "hello")?.rule, "set-back");
    retry(s, "n1", "hello");
    assert.equal(wantOf(pass(s), "n1", "hello")?.build, b2, "the retry lifts the mark");
    reportHave(s, "n1", "hello", b2, "failing");
    assert.equal(
      wantOf(pass(s), "n1", "hello")?.rule,
      "set-back",
      "a failure after it marks again",
    );
    retry(s, "all", "hello");
    assert.equal(wantOf(pass(s), "n1", "hello")?.build, b2, "a retry on all nodes lifts it too");
  });

  it("set-back: a healthy run of the build after its failure lifts the mark", () => {
    const { s, b2 } = newBuildAfterHealthy("n1");
    reportHave(s, "n1", "hello", b2, "failing");
    put(s, "n1", "hello", b2);
    assert.equal(wantOf(pass(s), "n1", "hello")?.rule, "put");
    reportHave(s, "n1", "hello", b2, "healthy");
    s.puts.clear();
    const w = wantOf(pass(s), "n1", "hello");
    assert.equal(w?.build, b2, "after the put ran it healthy, lifting the put keeps it");
    assert.equal(w?.rule, "newest");
  });

  it("order: a put beats a set-back (the operator's explicit choice)", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    reportHave(s, "n1", "hello", b1, "failing");
    put(s, "n1", "hello", b1);
    assert.equal(wantOf(pass(s), "n1", "hello")?.rule, "put");
  });

  it("checked: a composition the check refuses is not advanced to; the previous want stands", () => {
    const s = helloEverywhere("n1");
    assignTo(s, "all", "node-tools");
    const t1 = build(s, "node-tools", 1, {
      manifest: manifestOf("node-tools", 1, {
        bundles: [
          {
            name: "runtime",
            language: "typescript",
            entrypoints: ["main.ts"],
            digest: "a".repeat(64),
          },
        ],
        "own-secrets": { broker: { path: "broker.json" } },
      }),
    });
    const h1 = build(s, "hello", 1);
    assert.equal(wantOf(pass(s), "n1", "node-tools")?.build, t1);
    // A resolved manifest that the composition refuses (two runtime bundles).
    build(s, "node-tools", 2, {
      manifest: manifestOf("node-tools", 2, {
        bundles: [
          { name: "a", language: "typescript", entrypoints: ["a.ts"], digest: "b".repeat(64) },
          { name: "b", language: "typescript", entrypoints: ["b.ts"], digest: "c".repeat(64) },
        ],
        "own-secrets": { broker: { path: "broker.json" } },
      }),
    });
    const h2 = build(s, "hello", 2);
    const r = pass(s);
    const w = wantOf(r, "n1", "node-tools");
    assert.equal(w?.build, t1, "the previous want stands");
    assert.equal(w?.rule, "checked");
    assert.match(w?.reason ?? "", /composition check refuses/);
    assert.equal(wantOf(r, "n1", "hello")?.build, h2, "a module the check does not blame advances");
    assert.notEqual(h1, h2);
    assert.equal(r.compositions.get("n1")?.verdict, "ok");
    assert.ok((r.compositions.get("n1")?.reasons.length ?? 0) > 0);
    assert.ok(r.conditions.some((c) => c.name.startsWith("refused")));
  });

  it("widening: a widening build waits for a yes, then advances", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    pass(s);
    const b2 = build(s, "hello", 2, {
      manifest: manifestOf("hello", 2, { reads: ["counter/counts"] }),
    });
    let r = pass(s);
    const id = askId("hello", b2, ["read counter/counts"]);
    assert.equal(wantOf(r, "n1", "hello")?.build, b1);
    assert.equal(wantOf(r, "n1", "hello")?.rule, "widening");
    assert.deepEqual(r.asks.get(id)?.nodes, ["n1"]);
    s.answers.set(id, { answer: "no", by: "ada", at: s.now });
    r = pass(s);
    assert.equal(wantOf(r, "n1", "hello")?.build, b1, "a no keeps the previous want");
    s.answers.set(id, { answer: "yes", by: "ada", at: s.now });
    r = pass(s);
    assert.equal(wantOf(r, "n1", "hello")?.build, b2);
    assert.equal(wantOf(r, "n1", "hello")?.rule, "newest");
    r = pass(s);
    assert.equal(r.asks.has(id), false, "the ask is gone once the build is wanted");
    assert.equal(s.own.asks.has(id), false);
  });

  it("widening: a first want of a module asks nothing (nothing to widen from)", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1, { manifest: manifestOf("hello", 1, { calls: ["other/tool"] }) });
    const r = pass(s);
    assert.ok(wantOf(r, "n1", "hello"));
    assert.equal(r.asks.size, 0);
  });
});

describe("assign: writes and differences", () => {
  it("a module a filter leaves out on an adopted node stays wanted, says so, and is no difference", () => {
    const s = snapshot();
    present(s, "n1", { adopted: true });
    present(s, "n2");
    assignTo(s, "all", "fw");
    build(s, "fw", 1, {
      manifest: manifestOf("fw", 1, { filter: { description: "the firewall" } }),
    });
    const r = pass(s);
    const filtered = wantOf(r, "n1", "fw");
    assert.equal(filtered?.rule, "checked");
    assert.match(filtered?.reason ?? "", /^filtered on n1, so not run there: n1 is adopted/);
    assert.equal(r.differences.get("n1.fw"), undefined);
    assert.equal(wantOf(r, "n2", "fw")?.rule, "newest", "not adopted: wanted as ever");
  });

  it("a second pass over what the first wrote writes nothing", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1);
    const first = pass(s);
    assert.ok(first.writes.length > 0);
    assert.deepEqual(assign(s).writes, []);
  });

  it("unassigning deletes the want", () => {
    const s = helloEverywhere("n1");
    build(s, "hello", 1);
    pass(s);
    s.assignments.clear();
    const r = pass(s);
    assert.ok(r.writes.some((w) => w.bucket === "mesh-wants" && w.value === undefined));
    assert.equal(s.own.wants.size, 0);
  });

  it("differences say why want, composed and have differ, and vanish when they agree", () => {
    const s = helloEverywhere("n1");
    const b1 = build(s, "hello", 1);
    let r = pass(s);
    assert.equal(r.differences.get("n1.hello")?.want, b1);
    assert.equal(r.differences.get("n1.hello")?.reasons.length, 2);
    s.composed.set("n1", {
      node: "n1",
      resources: [],
      fingerprint: "f",
      modules: { hello: { build: b1, config: {}, bound: {} } },
    });
    reportHave(s, "n1", "hello", b1, "healthy");
    r = pass(s, ["n1"]);
    assert.equal(r.differences.has("n1.hello"), false);
    assert.equal(s.own.differences.has("n1.hello"), false);
  });

  it("a scoped pass decides those nodes as a full pass does", () => {
    const s = snapshot();
    for (const n of ["n1", "n2", "n3"]) present(s, n);
    assignTo(s, "all", "hello");
    build(s, "hello", 1);
    pass(s);
    build(s, "hello", 2);
    // The rollout's first step (the canary given) decides every node of the module; after it, a
    // scoped pass decides only its nodes.
    pass(s);
    reportHave(s, "n2", "hello", s.own.wants.get("n2.hello")?.build ?? "", "healthy");
    const full = assign(s);
    const scoped = assign(s, { nodes: ["n2"] });
    assert.deepEqual(scoped.wants.get("n2.hello"), full.wants.get("n2.hello"));
    assert.equal(scoped.wants.has("n1.hello"), false);
  });
});
