/**
 * The fleet's summary the assigner keeps under `mesh-summary.fleet` (decision 0090): core's read
 * model of what the assigner holds, with every module's conditions, written coalesced and only
 * when it says something new. On a real bus with the assigner's own grant.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket, sayCondition } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { Bucket, SUMMARY_KEY, type Summary } from "@mesh/protocol";
import { assignerBus } from "./test-assigner.js";
import { presenceOf } from "./test-fleet.js";

const fleet = assignerBus();
const NODES = 3;

/** Resolves with the first summary `test` accepts, read as the bus holds it. */
async function summaryWhere(
  test: (s: Summary) => boolean,
  what: string,
): Promise<{ summary: Summary; revision: number }> {
  const bucket = await KvBucket.open(fleet.admin, Bucket.summary);
  return deadline(
    (async () => {
      for (;;) {
        const entry = await bucket.get(SUMMARY_KEY);
        if (entry !== undefined && test(entry.value))
          return { summary: entry.value, revision: entry.revision };
        await new Promise((r) => setTimeout(r, 100));
      }
    })(),
    120_000,
    what,
  );
}

describe("assigner on a real bus: the fleet's summary", () => {
  it("counts what the read model says, names what needs attention with a module's condition, and writes a burst once", async () => {
    await fleet.freshLayout();
    const [build = ""] = await fleet.seed({ nodes: 0 });
    const presence = await KvBucket.open(fleet.admin, Bucket.presence);
    // Heartbeats from the future: present for the whole test however slow the machine is.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    for (let i = 1; i <= NODES; i++) await presence.put(`n${i}`, presenceOf(`n${i}`, later));
    await using assigner = await fleet.startAssigner();
    await summaryWhere(
      (s) => s.cells.assigned === NODES && s.cells.starting === NODES,
      "a summary of three cells starting",
    );
    await fleet.report(build, "healthy");
    const { summary } = await summaryWhere(
      (s) => s.cells.healthy === 1,
      "n1 healthy in the summary",
    );
    assert.deepEqual(summary.nodes, { total: NODES, present: NODES, gone: 0, never: 0 });
    assert.deepEqual(summary.modules, [
      { module: "hello", assigned: NODES, healthy: 1, starting: 2, notRunning: 0 },
    ]);

    // A module's own word about a node is the reason its cell does not run there.
    await sayCondition(fleet.admin, {
      module: "hello",
      name: "no-disk",
      level: "error",
      message: "the disk of n2 is full",
      node: "n2",
    });
    const said = await summaryWhere(
      (s) => s.attention.cells === 1,
      "n2's condition in the summary",
    );
    assert.equal(said.summary.attention.first[0]?.node, "n2");
    assert.equal(said.summary.attention.first[0]?.reason, "the disk of n2 is full");

    // A burst of reports: far fewer writes than changes.
    const have = await KvBucket.open(fleet.admin, Bucket.have);
    const burst = 40;
    for (let i = 0; i < burst; i++) {
      await have.put("n3.hello", {
        build: build,
        fingerprint: "f",
        health: i === burst - 1 ? "healthy" : "starting",
        since: new Date().toISOString(),
        restarts: i,
      });
    }
    const settled = await summaryWhere((s) => s.cells.healthy === 2, "n3 healthy");
    assert.ok(
      settled.revision - said.revision < burst / 2,
      `${settled.revision - said.revision} writes for ${burst} changes`,
    );
    assert.ok(assigner.passes.length > 0);
  });
});
