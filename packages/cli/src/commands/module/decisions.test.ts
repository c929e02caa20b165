/**
 * `mesh wants` and `mesh differences` say what `mesh status` says (issue 14): each assigned
 * (node, module) with the read model's state, reason and fix, also one that has no want and no
 * difference. The built CLI on the operator's grant against a real bus seeded as the mesh's
 * processes would leave it. And `mesh answer` writes through `answerAsk`, the view's call too.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { Bucket, Principal } from "@mesh/protocol";
import { healthyHave, presenceOf } from "../../testing/fixtures.js";
import { operatorBusSuite } from "../../testing/operator-bus.js";

const RUN_MS = 30_000;

interface Cell {
  node: string;
  module: string;
  state: string;
  reason: string;
  fix?: string;
}

describe("mesh wants and mesh differences agree with mesh status", () => {
  const bus = operatorBusSuite({ name: "decisions" }, { before, after });
  let beating: NodeJS.Timeout | undefined;

  before(async () => {
    const at = new Date().toISOString();
    const put = bus.put;
    // n1 beats as its host would, so it stays present however slowly the verbs run here.
    const beat = () => put(Bucket.presence, "n1", presenceOf("n1", new Date().toISOString()));
    await beat();
    beating = setInterval(() => void beat().catch(() => undefined), 5_000);
    // hello: every build failed, so nothing is wanted and nothing differs — yet it does not run.
    await put(Bucket.modules, "hello", {
      module: "hello",
      source: { kind: "directory", path: "/src/hello" },
      by: "ada",
      at,
    });
    await put(Bucket.builds, "hello.1-aaaaaaaa", {
      module: "hello",
      build: "1-aaaaaaaa",
      status: "failed",
      candidate: 1,
      bundles: [],
      log: "error TS2322",
      error: "compile error",
      timings: { started: at },
    });
    await put(Bucket.assignments, "n1.hello", { by: "ada", at });
    // board: wanted and healthy.
    await put(Bucket.assignments, "n1.board", { by: "ada", at });
    await put(Bucket.wants, "n1.board", {
      build: "2-bbbbbbbb",
      manifestDigest: "b".repeat(64),
      fingerprint: "f",
      rule: "newest",
      reason: "the newest build of board",
    });
    await put(Bucket.have, "n1.board", healthyHave("2-bbbbbbbb", at));
  });

  after(() => {
    clearInterval(beating);
  });

  const json = <T>(...args: string[]): Promise<T> => bus.json<T>(args, { deadlineMs: RUN_MS });
  const plain = (...args: string[]): Promise<string> => bus.text(args, { deadlineMs: RUN_MS });
  const pick = (c: Cell) => [c.node, c.module, c.state, c.reason, c.fix];

  test("a module assigned with no want is in wants, with status's state, reason and fix", async () => {
    const status = await json<{ attention: Cell[]; modules: Cell[] }>("status");
    const hello = status.attention.find((c) => c.module === "hello");
    assert.ok(hello !== undefined, "status names it under attention");
    assert.match(hello.reason, /every build of hello failed/);
    const wants = await json<{ wants: Record<string, unknown>; cells: Cell[] }>("wants");
    assert.deepEqual(
      wants.cells.map(pick),
      status.modules.map(pick),
      "one cell per assigned module, as status says it",
    );
    assert.deepEqual(Object.keys(wants.wants), ["n1.board"], "the raw wants are still there");
    const text = await plain("wants", "--module", "hello");
    assert.match(text, /n1\.hello: nothing wanted/);
    assert.match(text, /not running because every build of hello failed/);
    assert.match(text, /fix: `mesh builds hello`/);
  });

  test("differences names what does not run although nothing differs, and never says all is well then", async () => {
    const report = await json<{ attention: Cell[] }>("status");
    const differences = await json<{ differences: object; notRunning: Cell[] }>("differences");
    assert.deepEqual(differences.differences, {});
    assert.deepEqual(differences.notRunning.map(pick), report.attention.map(pick));
    const text = await plain("differences");
    assert.doesNotMatch(text, /every node has what it should/);
    assert.match(text, /n1\.hello: not running/);
    assert.match(await plain("differences", "--module", "board"), /every node has what it/);
    const status = await plain("status");
    assert.doesNotMatch(status, /every node has what it should/, "nor does status, then");
    assert.match(status, /what does not run is under NEEDS ATTENTION/);
  });
});

describe("mesh answer", () => {
  const bus = operatorBusSuite({ name: "answer" }, { before, after });

  test("writes the answer to a standing ask as the operator, through answerAsk (the view's call too)", async () => {
    await bus.put(Bucket.asks, "a-widened", {
      id: "a-widened",
      what: "hello 2 calls counter/add: allow it?",
      module: "hello",
      build: "2-widened",
      nodes: ["n1"],
      at: new Date().toISOString(),
    });
    const said = await bus.text(["answer", "a-widened", "no"], { deadlineMs: RUN_MS });
    assert.equal(said.trim(), "answered no to a-widened: hello 2 calls counter/add: allow it?");
    const written = await (await KvBucket.open(bus.admin, Bucket.answers)).get("a-widened");
    assert.equal(written?.value.answer, "no");
    assert.equal(written?.value.by, Principal.operator);
  });
});
