/**
 * The fault suite (issue 15): faults injected into a demo mesh under a constant tool-call load,
 * each measured the same way — failed calls, time until every module is healthy and answering
 * again, duplicate processes, and a before/after diff of what the mesh holds (modules, builds,
 * wants, config, secrets' names, and counter's kept total, which must never go back).
 */
import { spawnSync } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import { KvBucket, MeshBus } from "@mesh/bus";
import { Bucket, Principal } from "@mesh/protocol";
import { ConstantLoad, until, type DemoMesh, type MeshProcessKind } from "./demo-mesh.js";
import { markdownTable } from "./markdown-table.js";

export interface Fault {
  readonly name: string;
  /** What is done, for the report. */
  readonly what: string;
  /** Whether calls may fail while it lasts (the bus's and the runtime's faults). */
  readonly callsMayFail: boolean;
  inject(mesh: DemoMesh): Promise<void>;
}

export interface FaultResult {
  readonly fault: string;
  readonly what: string;
  readonly failedCalls: number;
  readonly answeredCalls: number;
  /** From the fault until every module is healthy, hello answers and counter counts again. */
  readonly backAfterMs: number;
  /** Processes that ran twice afterwards, by kind (none expected). */
  readonly duplicates: Readonly<Record<string, number>>;
  /** Buckets whose content differs afterwards (none expected). */
  readonly changed: readonly string[];
  /** What each changed bucket held before and after, as JSON, for the failure's message. */
  readonly changedDetail: Readonly<Record<string, { before: string; after: string }>>;
  /** How far counter's kept total went back (0 expected). */
  readonly lostWrites: number;
}

const killOne = (kind: MeshProcessKind) => async (mesh: DemoMesh) => {
  const [pid] = await mesh.pidsOf(kind);
  if (pid === undefined) throw new Error(`no ${kind} process runs for ${mesh.root}`);
  process.kill(pid, "SIGKILL");
};

const meshProcess = (kind: MeshProcessKind): Fault => ({
  name: kind,
  what: `kill -9 of the ${kind}`,
  callsMayFail: false,
  inject: killOne(kind),
});

/** Every fault the suite knows, by name. */
export const FAULTS: readonly Fault[] = [
  ...(["controller", "indexer", "builder", "assigner", "host", "host-launcher"] as const).map(
    meshProcess,
  ),
  {
    name: "module",
    what: "kill -9 of a module's own process (counter's daemon)",
    callsMayFail: false,
    inject: killOne("counter"),
  },
  {
    name: "runtime",
    what: "kill -9 of the node-tools runtime",
    callsMayFail: true,
    inject: killOne("runtime"),
  },
  {
    name: "bus",
    what: "kill -9 of nats-server",
    callsMayFail: true,
    inject: killOne("nats-server"),
  },
  {
    name: "bus-pause",
    what: "nats-server stopped (SIGSTOP) for 20 s, then continued",
    callsMayFail: true,
    async inject(mesh) {
      const [pid] = await mesh.pidsOf("nats-server");
      if (pid === undefined) throw new Error("no nats-server runs");
      process.kill(pid, "SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      process.kill(pid, "SIGCONT");
    },
  },
  {
    name: "group",
    what: "kill -9 of the whole mesh up process group, then mesh up again on the same root",
    callsMayFail: true,
    async inject(mesh) {
      await mesh.killGroup();
      await mesh.up();
    },
  },
  {
    name: "disk-full",
    what: "the store's filesystem filled to its last byte for 10 s, then freed",
    callsMayFail: true,
    async inject(mesh) {
      const fill = join(mesh.root, "chaos-fill");
      await fillDisk(fill);
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      await rm(fill, { force: true });
    },
  },
];

/** How long a mesh may take to be whole again after a fault before the suite calls it stuck. */
const BACK_MS = 120_000;

/** Injects one fault under the constant load and measures it. */
export async function runFault(mesh: DemoMesh, fault: Fault): Promise<FaultResult> {
  await until(async () => (await mesh.healthy()) || undefined, BACK_MS, "a healthy mesh first");
  const before = await snapshot(mesh);
  const load = new ConstantLoad(mesh);
  await until(() => Promise.resolve(load.answered > 2 || undefined), BACK_MS, "calls answered");
  const startedAt = Date.now();
  await fault.inject(mesh);
  const answeredAt = load.answered;
  await until(
    () => Promise.resolve(load.answered > answeredAt + 2 || undefined),
    BACK_MS,
    `hello to answer after ${fault.name}`,
  );
  await until(async () => (await mesh.healthy()) || undefined, BACK_MS, "every module healthy");
  const total = await until(() => mesh.counterTotal(), BACK_MS, "counter to answer");
  await until(
    async () => ((await mesh.counterTotal()) ?? total) > total || undefined,
    BACK_MS,
    "counter's total to move",
  );
  // Every tool of the demo answers, board's too (it reads what counter keeps).
  await until(
    async () => (await mesh.call("board", "show", {})) ?? undefined,
    BACK_MS,
    "board to answer",
  );
  const backAfterMs = Date.now() - startedAt;
  const calls = await load.stop();
  const after = await snapshot(mesh);
  return {
    fault: fault.name,
    what: fault.what,
    failedCalls: calls.failed,
    answeredCalls: calls.answered,
    backAfterMs,
    duplicates: await duplicates(mesh),
    changed: Object.keys(before.buckets).filter(
      (name) => before.buckets[name] !== after.buckets[name],
    ),
    changedDetail: Object.fromEntries(
      Object.keys(before.buckets)
        .filter((name) => before.buckets[name] !== after.buckets[name])
        .map((name) => [
          name,
          { before: before.buckets[name] ?? "", after: after.buckets[name] ?? "" },
        ]),
    ),
    lostWrites: Math.max(0, (before.counter ?? 0) - (after.counter ?? 0)),
  };
}

interface Snapshot {
  readonly buckets: Record<string, string>;
  readonly counter: number | undefined;
}

/** What must be the same after a fault: the operator's and the builder's records, as JSON. */
async function snapshot(mesh: DemoMesh): Promise<Snapshot> {
  const buckets: Record<string, string> = {};
  for (const name of [Bucket.modules, Bucket.builds, Bucket.wants, Bucket.config]) {
    buckets[name] = await bucketText(mesh.bus, name);
  }
  // Secrets are the controller's alone; their names (the values are sealed) are read as it.
  const controller = await MeshBus.connectWithFile(
    join(mesh.root, "credentials", `${Principal.controller}.json`),
    { say: () => undefined },
  );
  try {
    buckets[Bucket.secrets] = await bucketText(controller, Bucket.secrets);
  } finally {
    await controller.close();
  }
  return { buckets, counter: await mesh.counterTotal() };
}

/**
 * A bucket's content as JSON. A read that cannot be answered yet is tried again for a while: in a
 * cluster, a stream whose leader died elects another in 4–8 s (docs/nats.md §5), and listing
 * its keys needs the leader.
 */
async function bucketText(bus: MeshBus, name: Bucket): Promise<string> {
  const until = Date.now() + 30_000;
  for (;;) {
    const text = await bucketTextOnce(bus, name);
    if (!text.startsWith("unreadable") || Date.now() > until) return text;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function bucketTextOnce(bus: MeshBus, name: Bucket): Promise<string> {
  try {
    const bucket = await KvBucket.open(bus, name);
    const out: Record<string, unknown> = {};
    for (const key of (await bucket.keys()).sort()) {
      out[key] = (await bucket.get(key))?.value;
    }
    return JSON.stringify(out);
  } catch (error) {
    // Compared by whether it could be read at all: the message names a random consumer.
    return `unreadable (${(error as { code?: string }).code ?? "error"})`;
  }
}

/**
 * Kinds of process that run more than once for the mesh's root, and keep doing so: a runtime
 * handing over to its successor runs beside it until its calls are answered (the overlap that
 * keeps tool calls from failing), so a pair is judged only after it had time to end.
 */
const HANDOVER_SETTLE_MS = 30_000;

async function duplicates(mesh: DemoMesh): Promise<Record<string, number>> {
  const settle = Date.now() + HANDOVER_SETTLE_MS;
  for (;;) {
    const counts = new Map<string, number>();
    for (const p of await mesh.processes()) counts.set(p.kind, (counts.get(p.kind) ?? 0) + 1);
    const out: Record<string, number> = {};
    for (const [kind, count] of counts) if (count > 1 && kind !== "module") out[kind] = count;
    if (Object.keys(out).length === 0 || Date.now() > settle) return out;
    await delay(500);
  }
}

/** Writes zeros into `path` until the filesystem says it is full. */
async function fillDisk(path: string): Promise<void> {
  const file = await open(path, "w");
  const chunk = Buffer.alloc(4 << 20);
  try {
    for (;;) await file.write(chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    await file.close().catch(() => undefined);
  }
}

/**
 * Mounts a tmpfs of `sizeMiB` at `dir`, so the disk-full fault fills a small filesystem and not
 * the machine's. Only root can; false when it could not.
 */
export function mountSmallDisk(dir: string, sizeMiB: number): boolean {
  if (process.getuid?.() !== 0) return false;
  const done = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}m`, "tmpfs", dir]);
  return done.status === 0;
}

export function unmountSmallDisk(dir: string): void {
  spawnSync("umount", ["-l", dir]);
}

/** A deterministic shuffle: the same seed gives the same order, so a failing run replays. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** The results as the table docs/reliability.md shows. */
export function resultTable(results: readonly FaultResult[]): string {
  return markdownTable(results, {
    fault: (r) => r.fault,
    what: (r) => r.what,
    "failed calls": (r) => String(r.failedCalls),
    "whole again after": (r) => `${(r.backAfterMs / 1000).toFixed(1)} s`,
    duplicates: (r) =>
      Object.keys(r.duplicates).length === 0 ? "0" : JSON.stringify(r.duplicates),
    changed: (r) => (r.changed.length === 0 ? "none" : r.changed.join(", ")),
    "lost writes": (r) => String(r.lostWrites),
  });
}
