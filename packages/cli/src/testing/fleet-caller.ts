/**
 * A caller on a node of a fleet (fleet.ts): run in that node's namespace, it calls the tools it is
 * given one after another, as an operator on that machine would, and prints a JSON line of what
 * it counted every second and once more when it is told to stop (SIGTERM).
 *
 * With `--leader-credential FILE` (one that may write any stream: the controller's) it also
 * writes to counter's state after each round — `probe`, the next whole number, once the last is
 * acknowledged — and reads it back from the leader of its stream: the leader answers what the
 * cluster acknowledged, so a value below the last acknowledged one is an acknowledged write lost.
 * counter's kept total is read from the leader too (how far it went back is reported: counter's
 * daemon starts from what it reads, and its own writes are not acknowledged to anyone here).
 * counter's tool reads with a direct get, which any copy answers, one still catching up too: a
 * tool read lower than one before is a stale read, counted apart.
 *
 *   node fleet-caller.js --credential FILE --calls n2:hello/greet,n3:counter/read
 *     [--leader-credential FILE] [--timeout MS]
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { KvBucket, MeshBus, request } from "@mesh/bus";
import { toolSubject } from "@mesh/protocol";

export interface CallerCounts {
  readonly answered: number;
  readonly failed: number;
  /** Failed calls by `node:module/tool`. */
  readonly failedBy: Readonly<Record<string, number>>;
  /** The highest total the leader answered, and how far a later answer went below it. */
  readonly counterMax: number;
  readonly counterBack: number;
  /** Writes of `probe` acknowledged, and how far a leader's read went below the last one. */
  readonly acknowledged: number;
  readonly lostWrites: number;
  /** counter's tool reads (any copy answers) that were lower than one before. */
  readonly staleReads: number;
  /** How long the answered calls took, in ms (in the report at its end). */
  readonly latencyMs?: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly stopped: boolean;
}

const { values } = parseArgs({
  options: {
    credential: { type: "string" },
    calls: { type: "string" },
    timeout: { type: "string" },
    "leader-credential": { type: "string" },
  },
});
const calls = (values.calls ?? "").split(",").flatMap((spec) => {
  const match = /^([a-z][a-z0-9-]*):([a-z][a-z0-9-]*)\/([a-zA-Z0-9_-]+)$/.exec(spec.trim());
  return match === null
    ? []
    : [{ spec, node: match[1] ?? "", module: match[2] ?? "", tool: match[3] ?? "" }];
});
if (values.credential === undefined || calls.length === 0) {
  process.stderr.write("fleet-caller: give --credential FILE and --calls node:module/tool,…\n");
  process.exit(2);
}
const timeoutMs = Number(values.timeout ?? 5_000);
const bus = await MeshBus.connectWithFile(values.credential, {
  waitForBus: true,
  say: () => undefined,
});

let answered = 0;
let failed = 0;
const failedBy: Record<string, number> = {};
let counterMax = 0;
let counterBack = 0;
let acknowledged = 0;
let lostWrites = 0;
let toolMax = 0;
let staleReads = 0;
const took: number[] = [];
const leaderBus =
  values["leader-credential"] === undefined
    ? undefined
    : await MeshBus.connectWithFile(values["leader-credential"], {
        waitForBus: true,
        say: () => undefined,
      });
const counts$ = leaderBus === undefined ? undefined : await openCounts(leaderBus);

async function openCounts(bus: MeshBus): Promise<KvBucket<unknown> | undefined> {
  for (;;) {
    try {
      return await KvBucket.openWith(bus, "counter_counts", z.unknown(), { fromLeader: true });
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** One acknowledged write of the next number, and the leader's read of it after. */
async function probe(bucket: KvBucket<unknown>): Promise<void> {
  try {
    await bucket.put("probe", acknowledged + 1);
    acknowledged += 1;
  } catch {
    return; // not acknowledged: the same number is written again next round
  }
  const read = await leaderRead("probe");
  if (read !== undefined) lostWrites = Math.max(lostWrites, acknowledged - read);
}

/** A key of counter's state as the leader of its stream answers it; undefined when it did not. */
async function leaderRead(key: string): Promise<number | undefined> {
  try {
    const value = (await counts$?.get(key))?.value;
    return value === undefined ? undefined : Number(value);
  } catch {
    return undefined;
  }
}
function percentiles(ms: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.ceil(q * sorted.length) - 1] ?? 0);
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}

let stopping = false;
const print = (stopped: boolean) => {
  const counts: CallerCounts = {
    answered,
    failed,
    failedBy,
    counterMax,
    counterBack,
    acknowledged,
    lostWrites,
    staleReads,
    ...(stopped ? { latencyMs: percentiles(took) } : {}),
    stopped,
  };
  process.stdout.write(`${JSON.stringify(counts)}\n`);
};
const ticker = setInterval(() => print(false), 1_000);
process.once("SIGTERM", () => (stopping = true));

while (!stopping) {
  for (const call of calls) {
    if (stopping) break;
    try {
      const input = call.tool === "greet" ? { name: "Ada" } : {};
      const started = performance.now();
      const reply = await request(bus, toolSubject(call.node, call.module, call.tool), input, {
        timeoutMs,
      });
      answered += 1;
      took.push(performance.now() - started);
      const total = (reply as { total?: unknown } | undefined)?.total;
      if (call.module === "counter" && typeof total === "number") {
        if (total < toolMax) staleReads += 1;
        toolMax = Math.max(toolMax, total);
      }
    } catch {
      failed += 1;
      failedBy[call.spec] = (failedBy[call.spec] ?? 0) + 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const total = await leaderRead("total");
  if (total !== undefined) {
    counterBack = Math.max(counterBack, counterMax - total);
    counterMax = Math.max(counterMax, total);
  }
  if (counts$ !== undefined) await probe(counts$);
}
clearInterval(ticker);
print(true);
await bus.close();
await leaderBus?.close();
process.exit(0);
