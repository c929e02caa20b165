/**
 * Faults across a fleet's network (issue 23.2): partitions of a node, of the server a node is on,
 * of a minority server, a node away through builds and config changes, a server killed, and joins
 * refused across the link. Each is measured the same way — failed calls of a caller on another
 * node, time to converge after the heal, writes lost, processes that changed — and judged against
 * the bars in `wrong` (empty when it held). `npm run chaos -- --fleet` runs them and the
 * fleet's end-to-end test runs the short ones (fleet.e2e.test.ts).
 */
import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, streamPlacement } from "@mesh/bus";
import { Bucket, Principal, kvStreamName, nodeKey, nodeModuleKey } from "@mesh/protocol";
import type { Fleet } from "./fleet.js";
import { runMesh } from "./run-mesh.js";
import { until } from "./until.js";

export interface NetFaultResult {
  readonly fault: string;
  readonly what: string;
  readonly failedCalls: number;
  readonly answeredCalls: number;
  /** From the heal (or the fault, when nothing heals) until converged. */
  readonly convergedMs: number;
  readonly lostWrites: number;
  /** What else was measured, for the report. */
  readonly notes: readonly string[];
  /** What broke a bar of the issue; empty when every one held. */
  readonly wrong: readonly string[];
}

/** The bar the issue sets for converging after a heal and for failing over. */
export const CONVERGE_MS = 10_000;
/** How long a convergence may take before the run calls it stuck. */
export const STUCK_MS = 180_000;

/** Runs `mesh …` as the fleet's operator (from this machine's namespace, over its own link). */
export async function operator(fleet: Fleet, args: readonly string[]): Promise<void> {
  const run = await runMesh([...args, "--root", fleet.control.root]);
  if (run.code !== 0) throw new Error(`mesh ${args.join(" ")} failed: ${run.stdout}${run.stderr}`);
}

export async function greets(fleet: Fleet, node: string, module: string, word: string) {
  const reply = (await fleet.call(node, module, "greet", { name: "Ada" })) as
    { text?: string } | undefined;
  return reply?.text === `${word}, Ada!` || undefined;
}

/** The other nodes' hello, as the caller on `caller` calls them. */
export function otherCalls(fleet: Fleet, away: string): string[] {
  return ["c", ...fleet.nodes.map((n) => n.name)]
    .filter((n) => n !== away)
    .map((n) => `${n}:hello/greet`);
}

/**
 * A node cut off from every server for `awayMs` under a caller on another node: its processes
 * keep their pids, a config change made meanwhile reaches it within 10 s of the heal, and its
 * presence then says how long it was away.
 */
export async function nodePartition(
  fleet: Fleet,
  options: { readonly node: string; readonly caller: string; readonly awayMs: number },
): Promise<NetFaultResult> {
  const { node, awayMs } = options;
  await until(
    async () => await greets(fleet, node, "hello", await greetingOf(fleet)),
    STUCK_MS,
    `${node} answering first`,
  );
  const caller = fleet.caller(options.caller, otherCalls(fleet, node));
  await caller.answers(5, 60_000);
  const before = await fleet.pidsOf(node);
  await fleet.net.partition(node);
  const word = `Away${Date.now() % 100_000}`;
  await operator(fleet, ["config", "set", "hello", "greeting", word]);
  await delay(awayMs);
  const healedAt = new Date();
  await fleet.net.heal(node);
  await until(() => greets(fleet, node, "hello", word), STUCK_MS, `${node}'s hello to say ${word}`);
  const convergedMs = Date.now() - healedAt.getTime();
  const reported = await until(
    async () => {
      const presence = await KvBucket.open(fleet.control.bus, Bucket.presence);
      const outage = (await presence.get(nodeKey(node)))?.value.lastOutage;
      return outage !== undefined && new Date(outage.back) >= healedAt ? outage : undefined;
    },
    STUCK_MS,
    `${node}'s presence to report the outage`,
  );
  const after = await fleet.pidsOf(node);
  const counts = await caller.stop();
  const gone = before.filter((pid) => !after.includes(pid));
  const awaySeconds =
    (new Date(reported.back).getTime() - new Date(reported.lost).getTime()) / 1000;
  return {
    fault: `node-partition-${Math.round(awayMs / 1000)}s`,
    what: `${node}'s link down for ${Math.round(awayMs / 1000)} s, a config change meanwhile, a caller on ${options.caller}`,
    failedCalls: counts.failed,
    answeredCalls: counts.answered,
    convergedMs,
    lostWrites: 0,
    notes: [
      `${before.length} processes kept their pids (${gone.length} did not)`,
      `presence says away ${awaySeconds.toFixed(1)} s`,
    ],
    wrong: [
      ...(counts.failed > 0
        ? [`${counts.failed} calls to other nodes failed: ${JSON.stringify(counts.failedBy)}`]
        : []),
      ...(gone.length > 0
        ? [`processes ${gone.join(", ")} of ${node} did not survive (now ${after.join(", ")})`]
        : []),
      ...(convergedMs > CONVERGE_MS
        ? [`converged ${convergedMs} ms after the heal (over ${CONVERGE_MS})`]
        : []),
    ],
  };
}

/**
 * hello's mesh-wide greeting as `mesh config get` answers it ("Hello", its default, when none is
 * set). A verb that fails is asked again, up to the stuck limit: a read that failed is not a value.
 */
export async function greetingOf(fleet: Fleet): Promise<string> {
  return until(
    async () => {
      const run = await runMesh([
        ...["config", "get", "hello", "greeting", "--json"],
        ...["--root", fleet.control.root],
      ]);
      if (run.code !== 0) return undefined;
      const { keys } = JSON.parse(run.stdout) as {
        keys?: Array<{ key?: string; value?: { value?: unknown } }>;
      };
      const value = keys?.find((k) => k.key === "greeting")?.value?.value;
      return typeof value === "string" ? value : "Hello";
    },
    STUCK_MS,
    "mesh config get hello greeting to answer",
  );
}

/** How long after `healedAt` the server is a current follower (lag 0) of the config bucket again. */
export async function caughtUpAfter(
  fleet: Fleet,
  server: string,
  healedAt: number,
): Promise<number> {
  const admin = await controllerBus(fleet);
  try {
    await until(
      async () => {
        const placed = await streamPlacement(admin, kvStreamName(Bucket.config)).catch(
          () => undefined,
        );
        if (placed === undefined) return undefined;
        if (placed.leader?.endsWith(`-${server}`) === true) return true;
        const me = placed.followers.find((f) => f.name.endsWith(`-${server}`));
        return me?.current === true && me.lag === 0 ? true : undefined;
      },
      STUCK_MS,
      `${server} to catch up`,
    );
    return Date.now() - healedAt;
  } finally {
    await admin.close();
  }
}

export function controllerBus(fleet: Fleet): Promise<MeshBus> {
  return MeshBus.connectWithFile(
    join(fleet.control.root, "credentials", `${Principal.controller}.json`),
    { say: () => undefined },
  );
}

const HELLO = fileURLToPath(new URL("../../../../examples/modules/hello/", import.meta.url));

/**
 * A node away while three builds and two config changes of a module happened comes back to
 * exactly the newest build and the newest value.
 */
export async function awayThroughChanges(fleet: Fleet, options: { readonly node: string }) {
  const { node } = options;
  const dir = join(fleet.dir, "sources", "away");
  await cp(HELLO, dir, { recursive: true });
  const manifest = join(dir, "mesh.yaml");
  await writeFile(
    manifest,
    (await readFile(manifest, "utf8")).replace("module: hello", "module: away"),
  );
  await operator(fleet, ["module", "add", dir]);
  await operator(fleet, ["assign", "away", "--node", node]);
  const first = await builtBuilds(fleet, 1);
  await until(
    () => haveBuild(fleet, node, first.at(-1)),
    STUCK_MS,
    `${node} to run away's first build`,
  );
  await fleet.net.partition(node);
  const tools = join(dir, "src", "tools.ts");
  for (let edit = 1; edit <= 3; edit++) {
    await writeFile(tools, `${await readFile(tools, "utf8")}\n// edit ${edit}\n`);
    await builtBuilds(fleet, 1 + edit);
  }
  await operator(fleet, ["config", "set", "away", "greeting", "Second"]);
  await operator(fleet, ["config", "set", "away", "greeting", "Newest"]);
  const newest = (await builtBuilds(fleet, 4)).at(-1);
  const healedAt = Date.now();
  await fleet.net.heal(node);
  await until(
    async () =>
      (await haveBuild(fleet, node, newest)) && (await greets(fleet, node, "away", "Newest")),
    STUCK_MS,
    `${node} to run the newest build and value`,
  );
  const convergedMs = Date.now() - healedAt;
  return {
    fault: "away-through-changes",
    what: `${node} cut off while away was built three times and its greeting set twice`,
    failedCalls: 0,
    answeredCalls: 0,
    convergedMs,
    lostWrites: 0,
    notes: [
      `${node} runs ${String(newest)} and says Newest ${(convergedMs / 1000).toFixed(1)} s after the heal`,
    ],
    wrong:
      convergedMs > CONVERGE_MS
        ? [`converged ${convergedMs} ms after the heal (over ${CONVERGE_MS})`]
        : [],
  } satisfies NetFaultResult;
}

/** Waits until away has `count` built builds; their ids, oldest first. */
async function builtBuilds(fleet: Fleet, count: number): Promise<string[]> {
  return until(
    async () => {
      const builds = await KvBucket.open(fleet.control.bus, Bucket.builds);
      const built: { id: string; at: string }[] = [];
      for (const key of await builds.keys()) {
        if (!key.startsWith("away.")) continue;
        const value = (await builds.get(key))?.value;
        if (value?.status === "built")
          built.push({
            id: key.slice("away.".length),
            at: String(value.candidate).padStart(9, "0"),
          });
      }
      built.sort((a, b) => a.at.localeCompare(b.at));
      return built.length >= count ? built.map((b) => b.id) : undefined;
    },
    STUCK_MS,
    `away to have ${count} builds`,
  );
}

async function haveBuild(fleet: Fleet, node: string, build: string | undefined) {
  const have = await KvBucket.open(fleet.control.bus, Bucket.have);
  const entry = (await have.get(nodeModuleKey(node, "away")))?.value;
  return (entry?.build === build && entry?.health === "healthy") || undefined;
}
