/**
 * The servers' faults across a fleet's network (issue 23.2; the nodes' are in fleet-faults.ts):
 * the server a node is on cut off, a minority server cut off while writes go on, a server killed
 * and another cut off, and joins refused across the link.
 */
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { KvBucket, streamPlacement } from "@mesh/bus";
import { makeSelfSigned } from "@mesh/bus/server";
import {
  Bucket,
  ErrorCode,
  kvStreamName,
  nodeModuleKey,
  pinJoinToken,
  unpinJoinToken,
} from "@mesh/protocol";
import type { Fleet } from "./fleet.js";
import {
  CONVERGE_MS,
  STUCK_MS,
  caughtUpAfter,
  controllerBus,
  greetingOf,
  operator,
  otherCalls,
  type NetFaultResult,
} from "./fleet-faults.js";
import { runMesh } from "./run-mesh.js";
import { until } from "./until.js";

/**
 * The server a node's host is connected to goes behind a partition: the node fails over to
 * another within 10 s, and the server catches up once healed.
 */
export async function serverPartition(
  fleet: Fleet,
  options: { readonly node: string; readonly awayMs: number },
): Promise<NetFaultResult> {
  const { node } = options;
  const index = await until(
    () => fleet.connectedServer(node),
    STUCK_MS,
    `${node}'s host on a server`,
  );
  const server = fleet.servers[index]?.name ?? "";
  const caller = fleet.caller(node, [`${node}:hello/greet`, ...otherCalls(fleet, node)]);
  await caller.answers(5, 60_000);
  const cutAt = Date.now();
  await fleet.net.partition(server);
  const now = await until(
    async () => {
      const on = await fleet.connectedServer(node);
      return on !== undefined && on !== index ? on : undefined;
    },
    STUCK_MS,
    `${node} to fail over from ${server}`,
  );
  const failoverMs = Date.now() - cutAt;
  await delay(Math.max(0, options.awayMs - failoverMs));
  const healedAt = Date.now();
  await fleet.net.heal(server);
  const caughtUp = await caughtUpAfter(fleet, server, healedAt);
  const counts = await caller.stop();
  return {
    fault: "server-partition",
    what: `the server ${node}'s host was on (${server}) cut off for ${Math.round(options.awayMs / 1000)} s`,
    failedCalls: counts.failed,
    answeredCalls: counts.answered,
    convergedMs: failoverMs,
    lostWrites: 0,
    notes: [
      `${node} moved to ${fleet.servers[now]?.name ?? "?"} after ${(failoverMs / 1000).toFixed(1)} s`,
      `${server} current again ${(caughtUp / 1000).toFixed(1)} s after the heal`,
    ],
    wrong:
      failoverMs > CONVERGE_MS ? [`failed over after ${failoverMs} ms (over ${CONVERGE_MS})`] : [],
  };
}

/**
 * A minority server (one of three, not the config bucket's leader) cut off: config writes on the
 * majority go on, each acknowledged one is there after the heal, and the server catches up.
 */
export async function minorityPartition(fleet: Fleet, options: { readonly writes: number }) {
  const admin = await controllerBus(fleet);
  const { leader } = await streamPlacement(admin, kvStreamName(Bucket.config));
  await admin.close();
  const minority = fleet.servers.find((s) => leader?.endsWith(`-${s.name}`) !== true)?.name ?? "s3";
  await fleet.net.partition(minority);
  const written: string[] = [];
  const refusals = new Set<string>();
  let failed = 0;
  for (let i = 0; i < options.writes; i++) {
    const word = `Minority${i}x${Date.now() % 100_000}`;
    const run = await runMesh([
      "config",
      "set",
      "hello",
      "greeting",
      word,
      "--root",
      fleet.control.root,
    ]);
    if (run.code === 0) written.push(word);
    else {
      failed += 1;
      refusals.add((run.stderr || run.stdout).trim().split("\n")[0]?.slice(0, 300) ?? "");
    }
  }
  const healedAt = Date.now();
  await fleet.net.heal(minority);
  // Read at once, while the server cut off is still behind (decision 0210), and once it caught up.
  const atOnce = await greetingOf(fleet);
  const readMs = Date.now() - healedAt;
  const caughtUp = await caughtUpAfter(fleet, minority, healedAt);
  const last = written.at(-1);
  const kept = await greetingOf(fleet);
  const lost = last !== undefined && kept !== last ? 1 : 0;
  return {
    fault: "minority-partition",
    what: `${minority} (not the leader) cut off from the cluster while ${options.writes} config writes were made`,
    failedCalls: failed,
    answeredCalls: written.length,
    convergedMs: caughtUp,
    lostWrites: lost,
    notes: [
      `${written.length} of ${options.writes} writes acknowledged on the majority`,
      `${minority} current again ${(caughtUp / 1000).toFixed(1)} s after the heal`,
      `mesh config get at once gave ${atOnce === last ? "the newest write" : atOnce} in ${(readMs / 1000).toFixed(1)} s`,
    ],
    wrong: [
      ...(last !== undefined && atOnce !== last
        ? [`mesh config get at once after the heal gave ${atOnce}, not the newest write ${last}`]
        : []),
      ...(failed > 0
        ? [`${failed} writes refused on the majority (${[...refusals].join("; ")})`]
        : []),
      ...(lost > 0
        ? [`the newest acknowledged write ${String(last)} is not what the bucket holds (${kept})`]
        : []),
    ],
  } satisfies NetFaultResult;
}

/**
 * Joins refused across the real link, from a machine of the fleet's network that is not a node
 * yet: a token pinning another certificate (TLS_PIN_MISMATCH, before the secret is sent), a token
 * used once already, and one past its expiry (both REFUSED).
 */
export async function refusedJoins(fleet: Fleet) {
  const member = fleet.net.members.get("x1") ?? (await fleet.net.add("x1", 200));
  const join1 = (token: string, node: string) =>
    runMesh(
      [
        "join",
        fleet.busUrl,
        "--token",
        token,
        "--node",
        node,
        "--root",
        join(fleet.dir, node),
        "--no-run",
        "--json",
      ],
      { netns: member.netns },
    );
  const impostor = makeSelfSigned({
    commonName: "impostor",
    hosts: [fleet.servers[0]?.address ?? ""],
  });
  const pinned = await fleet.joinToken();
  const wrongPin = await join1(
    pinJoinToken(unpinJoinToken(pinned).token, impostor.fingerprint),
    "x1",
  );
  const used = await join1(pinned, "x1");
  const reused = await join1(pinned, "x2");
  const expiring = await fleet.joinToken(["--ttl", "1"]);
  await delay(2_500);
  const expired = await join1(expiring, "x3");
  const outcome = (run: { code: number | null; stdout: string; stderr: string }) =>
    run.code === 0
      ? "exit 0, joined"
      : `exit ${String(run.code)} ${/"code":\s*"([A-Z_]+)"/.exec(run.stdout + run.stderr)?.[1] ?? (run.stdout + run.stderr).slice(0, 200)}`;
  const wrong = [
    ...(wrongPin.code === 3 &&
    (wrongPin.stdout + wrongPin.stderr).includes(ErrorCode.TLS_PIN_MISMATCH)
      ? []
      : [`a wrong pin: ${outcome(wrongPin)}`]),
    ...(used.code === 0 ? [] : [`the right pin after it: ${outcome(used)}`]),
    ...((reused.stdout + reused.stderr).includes(ErrorCode.REFUSED) && reused.code !== 0
      ? []
      : [`a reused token: ${outcome(reused)}`]),
    ...((expired.stdout + expired.stderr).includes(ErrorCode.REFUSED) && expired.code !== 0
      ? []
      : [`an expired token: ${outcome(expired)}`]),
  ];
  return {
    fault: "refused-joins",
    what: `mesh join from ${member.address}: a wrong pin, then the right one, the token again, an expired token`,
    failedCalls: 0,
    answeredCalls: 0,
    convergedMs: 0,
    lostWrites: 0,
    notes: [
      `wrong pin ${outcome(wrongPin)}; right pin ${outcome(used)}; reused ${outcome(reused)}; expired ${outcome(expired)}`,
    ],
    wrong,
  } satisfies NetFaultResult;
}

/**
 * counter on one node only (its daemon is the one writer of its total, so a total that goes back
 * is a write lost), then one server killed and, once it is back, another cut off, under a caller
 * on another node: calls keep answering, counter loses no acknowledged write.
 */
export async function serverKillAndPartition(
  fleet: Fleet,
  options: { readonly caller: string; readonly counterNode: string; readonly awayMs: number },
): Promise<NetFaultResult> {
  const { counterNode } = options;
  await operator(fleet, ["unassign", "counter", "--all"]);
  await operator(fleet, ["assign", "counter", "--node", counterNode]);
  const others = ["c", ...fleet.nodes.map((n) => n.name)].filter((n) => n !== counterNode);
  await until(
    async () => {
      const have = await KvBucket.open(fleet.control.bus, Bucket.have);
      for (const n of others) {
        if ((await have.get(nodeModuleKey(n, "counter")))?.value.health === "healthy")
          return undefined;
      }
      return (await fleet.healthy(counterNode, ["counter"])) || undefined;
    },
    STUCK_MS,
    `counter to run on ${counterNode} only`,
  );
  const caller = fleet.caller(
    options.caller,
    [`${counterNode}:counter/read`, ...otherCalls(fleet, "")],
    { leaderReads: true },
  );
  await caller.answers(10, 60_000);
  const before = caller.counts().counterMax;
  const victim = await fleet.serverPid(0);
  if (victim === undefined) throw new Error("no nats-server of s1 runs");
  process.kill(victim, "SIGKILL");
  const killedAt = Date.now();
  await until(
    async () => {
      const pid = await fleet.serverPid(0);
      return pid !== undefined && pid !== victim ? pid : undefined;
    },
    STUCK_MS,
    "s1 to be started again",
  );
  await caller.answers(10, STUCK_MS);
  const afterKill = Date.now() - killedAt;
  const cut = fleet.servers[1]?.name ?? "s2";
  await fleet.net.partition(cut);
  await caller.answers(10, STUCK_MS);
  await delay(options.awayMs);
  const healedAt = Date.now();
  await fleet.net.heal(cut);
  const caughtUp = await caughtUpAfter(fleet, cut, healedAt);
  await until(
    () => Promise.resolve(caller.counts().counterMax > before + 2 || undefined),
    STUCK_MS,
    "counter's total to move on",
  );
  const counts = await caller.stop();
  return {
    fault: "server-kill-and-partition",
    what: `kill -9 of s1, then ${cut} cut off for ${Math.round(options.awayMs / 1000)} s, under a caller on ${options.caller}`,
    failedCalls: counts.failed,
    answeredCalls: counts.answered,
    convergedMs: caughtUp,
    lostWrites: counts.lostWrites,
    notes: [
      `calls answered again ${(afterKill / 1000).toFixed(1)} s after the kill`,
      `${counts.acknowledged} acknowledged writes to counter's state, ${counts.lostWrites} lost`,
      `counter's total ${before} → ${counts.counterMax} as its stream's leader answers it (went back by ${counts.counterBack})`,
      `${counts.staleReads} of counter's tool reads answered by a copy still catching up (lower than one before)`,
      `${cut} current again ${(caughtUp / 1000).toFixed(1)} s after the heal`,
    ],
    wrong: [
      ...(counts.lostWrites > 0 ? [`${counts.lostWrites} acknowledged writes lost`] : []),
      ...(counts.acknowledged === 0 ? ["no write to counter's state was acknowledged"] : []),
    ],
  };
}
