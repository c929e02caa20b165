/**
 * Slow, lossy links (issue 23.2, decision 0213): every node's link adds a round trip and drops a
 * share of packets each way, from before the nodes join. Measured: how long the demo took to run
 * healthy on every node after the first join, a caller on one node calling a tool served on
 * another for a while (calls made, failed, and how long they took), and how long a config change
 * took to reach every node; and, as evidence that the links were what they claim, the round trip
 * the node's TCP saw, its retransmissions, and the packets nft dropped. And a failover across
 * the slow links: the server a node is on cut off.
 */
import { execFile } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { Fleet } from "./fleet.js";
import type { LinkQuality } from "./fleet-net.js";
import { CONVERGE_MS, STUCK_MS, greets, operator, type NetFaultResult } from "./fleet-faults.js";
import { serverPartition } from "./fleet-server-faults.js";
import { until } from "./until.js";

const run = promisify(execFile);

/** What the issue asks of every node link. */
export const SLOW_LOSSY: LinkQuality = { delayMs: 200, lossPercent: 5 };

/** A fleet whose every node link is `link` from before the nodes join. */
export function startSlowFleet(options: {
  readonly nodes: number;
  readonly link?: LinkQuality;
  readonly say?: (line: string) => void;
}): Promise<Fleet> {
  return Fleet.start({
    nodes: options.nodes,
    servers: 3,
    link: options.link ?? SLOW_LOSSY,
    ...(options.say === undefined ? {} : { say: options.say }),
  });
}

/** What a node's TCP saw on its connections to the bus (`ss -ti` in its namespace). */
export interface TcpSeen {
  /** The smoothed round trip of its connections to the bus, in ms (the largest). */
  readonly rttMs: number;
  /** Segments retransmitted on them in all. */
  readonly retransmits: number;
}

export async function tcpSeen(fleet: Fleet, node: string): Promise<TcpSeen> {
  const { netns } = fleet.node(node).member;
  const { stdout } = await run("ip", [
    ...["netns", "exec", netns, "ss", "-tin", "state", "established"],
    ...["dport", "=", ":4222"],
  ]);
  let rttMs = 0;
  let retransmits = 0;
  for (const match of stdout.matchAll(/\brtt:([\d.]+)\//g)) {
    rttMs = Math.max(rttMs, Number(match[1]));
  }
  for (const match of stdout.matchAll(/\bretrans:\d+\/(\d+)/g)) retransmits += Number(match[1]);
  return { rttMs, retransmits };
}

/**
 * On a fleet started with slow links: a caller on `caller` calls `callee`'s hello for `callMs`
 * (none may fail), then a config change must reach every node within the convergence bar.
 */
export async function slowLossyLinks(
  fleet: Fleet,
  options: { readonly caller: string; readonly callee: string; readonly callMs: number },
): Promise<NetFaultResult> {
  const quality = fleet.net.quality(options.caller);
  if (quality === undefined) throw new Error(`${options.caller}'s link is not slow`);
  const caller = fleet.caller(options.caller, [`${options.callee}:hello/greet`]);
  await caller.answers(1, STUCK_MS);
  await delay(options.callMs);
  const counts = await caller.stop();
  const word = `Slow${Date.now() % 100_000}`;
  await operator(fleet, ["config", "set", "hello", "greeting", word]);
  const setAt = Date.now(); // acknowledged: the verb's own start on a loaded machine is not the links'
  for (const node of ["c", ...fleet.nodes.map((n) => n.name)]) {
    await until(
      () => greets(fleet, node, "hello", word),
      STUCK_MS,
      `${node}'s hello to say ${word}`,
    );
  }
  const configMs = Date.now() - setAt;
  let dropped = 0;
  for (const node of fleet.nodes) dropped += await fleet.net.dropped(node.name);
  const seen = await tcpSeen(fleet, options.caller);
  const latency = counts.latencyMs ?? { p50: 0, p99: 0, max: 0 };
  const calls = `${options.caller} → ${options.callee}`;
  return {
    fault: "slow-lossy-links",
    what: `every node link +${quality.delayMs} ms round trip and ${quality.lossPercent}% loss each way; a caller on ${options.caller} calls ${options.callee}'s hello for ${Math.round(options.callMs / 1000)} s`,
    failedCalls: counts.failed,
    answeredCalls: counts.answered,
    convergedMs: configMs,
    lostWrites: 0,
    notes: [
      `the demo healthy on every node ${(fleet.convergedMs / 1000).toFixed(1)} s after the first join`,
      `calls ${calls} p50 ${latency.p50} ms, p99 ${latency.p99} ms, max ${latency.max} ms`,
      `a config change on every node ${(configMs / 1000).toFixed(1)} s after it was acknowledged`,
      `${options.caller}'s TCP to the bus: rtt ${seen.rttMs.toFixed(0)} ms, ${seen.retransmits} segments retransmitted`,
      `${dropped} packets dropped on the node links`,
    ],
    wrong: [
      ...(counts.failed > 0
        ? [`${counts.failed} calls ${calls} failed: ${JSON.stringify(counts.failedBy)}`]
        : []),
      ...(counts.answered === 0 ? [`no call ${calls} was answered`] : []),
      ...(configMs > CONVERGE_MS
        ? [`the config change reached every node after ${configMs} ms (over ${CONVERGE_MS})`]
        : []),
      // The links must have been what they claim: a call crosses two of them.
      ...(latency.p50 < 2 * quality.delayMs
        ? [`calls took ${latency.p50} ms (p50), less than two links' ${2 * quality.delayMs} ms`]
        : []),
      ...(quality.lossPercent > 0 && dropped === 0 ? ["the links dropped no packet"] : []),
    ],
  };
}

/**
 * The server a node's host is on cut off, on a fleet with slow links: the node fails over to
 * another server across its slow link (the same bar as on plain links).
 */
export async function slowServerPartition(
  fleet: Fleet,
  options: { readonly node: string; readonly awayMs: number },
): Promise<NetFaultResult> {
  const quality = fleet.net.quality(options.node);
  if (quality === undefined) throw new Error(`${options.node}'s link is not slow`);
  const result = await serverPartition(fleet, options);
  return {
    ...result,
    fault: "slow-server-partition",
    what: `${result.what}, every node link +${quality.delayMs} ms round trip and ${quality.lossPercent}% loss each way`,
  };
}
