/**
 * A fleet whose every node link adds 200 ms of round trip and drops 5% of packets each way
 * (issue 23.2, decision 0213), from before the nodes join: three bus servers and two nodes on
 * network namespaces, joined over TLS with the pin across the slow links. The demo runs healthy
 * on both; a caller on n1 calling n2's hello for 30 s sees no call fail (TCP's retransmissions
 * are all it costs), the calls take the two links' round trips, and a config change reaches
 * every node. Needs root and nftables: without them the test fails and says so (CI is root).
 *
 * Everything it makes goes also when the runner cancels it: the link wires and every process by
 * the reaper (by pid), the namespaces with their links, bridges, TAP devices and nft tables by
 * their prefix.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Fleet } from "../testing/fleet.js";
import { netnsUnavailable } from "../testing/fleet-net.js";
import {
  SLOW_LOSSY,
  slowLossyLinks,
  startSlowFleet,
  tcpSeen,
} from "../testing/fleet-link-faults.js";

let fleet: Fleet | undefined;

before(async () => {
  const unavailable = await netnsUnavailable();
  if (unavailable !== undefined) throw new Error(`the fleet test cannot run: ${unavailable}`);
  fleet = await startSlowFleet({ nodes: 2 });
});

after(async () => {
  await fleet?.stop();
});

test("across links of +200 ms and 5% loss the demo converges and no call fails", async () => {
  assert.ok(fleet !== undefined);
  for (const node of fleet.nodes) {
    assert.deepEqual(fleet.net.quality(node.name), SLOW_LOSSY, `${node.name}'s link is slow`);
    assert.ok(await fleet.healthy(node.name), `${node.name} runs the demo healthy`);
  }
  const seen = await tcpSeen(fleet, "n1");
  assert.ok(
    seen.rttMs >= SLOW_LOSSY.delayMs,
    `n1's TCP to the bus sees the link's round trip (rtt ${seen.rttMs} ms)`,
  );
  const result = await slowLossyLinks(fleet, { caller: "n1", callee: "n2", callMs: 30_000 });
  const summary = `${result.failedCalls} failed of ${result.failedCalls + result.answeredCalls} calls; ${result.notes.join("; ")}`;
  assert.deepEqual(result.wrong, [], summary);
  assert.equal(result.failedCalls, 0, summary);
  assert.ok(result.answeredCalls > 0, summary);
  process.stdout.write(`# slow-lossy-links: ${summary}\n`);
});
