/**
 * Issue 14.1: a read of what stands ends when everything standing has been handed, also when
 * nothing stands. The built CLI with the operator's grant against a real bus whose layout is
 * there and empty, as on a mesh started without `--demo`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { operatorBusSuite } from "../testing/operator-bus.js";
import { startMesh, type MeshRun } from "../testing/run-mesh.js";

/** A read of an empty mesh takes well under a second; this catches a hang, not a slow machine. */
const READ_MS = 15_000;

describe("read verbs on a mesh where nothing stands", () => {
  const bus = operatorBusSuite({ name: "reads" }, { before, after });

  const read = (...args: string[]): Promise<MeshRun> => bus.run(args, { deadlineMs: READ_MS });

  test("status and status --json end on an empty mesh, saying nothing stands", async () => {
    const plain = await read("status");
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /no node has joined/);
    assert.match(plain.stdout, /RECENT CONDITIONS\n {2}none/);
    const json = await read("status", "--json");
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as { ok: boolean; conditions: unknown[] };
    assert.equal(report.ok, true);
    assert.deepEqual(report.conditions, []);
  });

  test("conditions ends when no condition exists, with and without --module", async () => {
    const all = await read("conditions");
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout, "no conditions are kept\n");
    const one = await read("conditions", "--module", "nosuch", "--json");
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(JSON.parse(one.stdout), { ok: true, conditions: [] });
  });

  test("logs ends when the module has no kept output", async () => {
    const plain = await read("logs", "hello");
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /no output of hello is kept/);
    const json = await read("logs", "hello", "--node", "n1", "--json");
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { ok: true, module: "hello", lines: [] });
  });

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`logs --follow ends with exit 0 on the first ${signal}`, async () => {
      await using follow = startMesh(["logs", "hello", "--follow", "--credential", bus.credential]);
      await follow.stderrShows(/waiting for new lines/);
      process.kill(follow.pid, signal);
      const ended = await follow.ended(READ_MS);
      assert.equal(ended.code, 0, ended.stderr);
    });
  }
});
