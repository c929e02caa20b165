/**
 * `mesh retry <module> [--node N]`: lifts the failed marks of a module (docs/decisions/0034). A
 * build a node reported failing is not wanted there again while another build ran healthy there;
 * a retry records the have bucket's revision, and every failing report up to it no longer marks
 * its build, so the assigner wants the newest build there again. Also what `mesh unput` says.
 */
import type { Command } from "commander";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { marksOf, type HaveRecord } from "@mesh/core";
import {
  Bucket,
  RolloutSteer,
  checkName,
  parseNodeModuleKey,
  targetModuleKey,
  type Build,
  type Have,
  type Retry,
  type Target,
} from "@mesh/protocol";
import { connectToMesh } from "../../find-mesh.js";
import type { ExitCode } from "../../output.js";
import { act, answerDone, meshVerb, type Done, type MeshOptions } from "../../verb.js";

export interface RetryOptions extends MeshOptions {
  readonly node?: string;
  readonly why?: string;
}

export function registerRetryVerb(program: Command): void {
  act(
    meshVerb(
      program,
      "retry",
      "Lift the failed marks of a module, so the newest build is wanted again where a failure set it back.",
    )
      .argument("<module>")
      .option("--node <name>", "only this node (default: every node)")
      .option("--why <text>", "why, for the record"),
    retryVerb,
  );
}

/** What a module's have reports say: the builds marked failing per node, and the last revision. */
export interface Marks {
  /** Node → the builds marked failing there, sorted. */
  readonly marked: ReadonlyMap<string, readonly string[]>;
  /** The highest revision of any report read: a retry at it lifts every mark read. */
  readonly revision: number;
}

/** The failed marks of a module on one node or every node, as the assigner counts them. */
export async function readMarks(bus: MeshBus, module: string, node?: string): Promise<Marks> {
  const have = await KvBucket.open(bus, Bucket.have);
  const retries = await KvBucket.open(bus, Bucket.retries);
  const all = (await retries.get(targetModuleKey({ all: true }, module)))?.value.haveRevision ?? 0;
  const keys = node === undefined ? await have.keys(`*.${module}`) : [`${node}.${module}`];
  const marked = new Map<string, string[]>();
  let revision = 0;
  for (const key of keys) {
    const { node: n } = parseNodeModuleKey(key);
    const history = (await have.history(key)).filter(
      (h): h is typeof h & { value: Have } => h.value !== undefined,
    );
    for (const h of history) revision = Math.max(revision, h.revision);
    const own = (await retries.get(key))?.value.haveRevision ?? 0;
    const record: HaveRecord = {
      current: history.at(-1)?.value,
      history: history.map((h) => ({ ...h.value, revision: h.revision })),
    };
    const builds = [...marksOf(record, Math.max(own, all))].sort();
    if (builds.length > 0) marked.set(n, builds);
  }
  return { marked, revision };
}

export async function retryVerb(module: string, options: RetryOptions): Promise<ExitCode> {
  checkName("module", module);
  const node = options.node === undefined ? undefined : checkName("node", options.node);
  await using bus = await connectToMesh(options);
  const done = await retry(bus, {
    module,
    ...(node === undefined ? {} : { node }),
    ...(options.why === undefined ? {} : { why: options.why }),
  });
  return answerDone(options, done);
}

/** A retry of a module on one node, or on every node without `node`. */
export interface RetryInput {
  module: string;
  node?: string;
  why?: string;
}

/**
 * `mesh retry` on a bus: the view's page does the same. When the newest build's rollout halted
 * on a failure, the rule `halt` keeps it from every node whatever the marks say, so a retry is
 * also the rollout's retry: a new attempt from its canary, with the marks lifted on every node
 * (or the canary's old failing report would halt it again at once). An abort stands: it was the
 * operator's word, and `mesh rollout retry` lifts it.
 */
export async function retry(bus: MeshBus, input: RetryInput): Promise<Done> {
  const module = checkName("module", input.module);
  const rollout = (await (await KvBucket.open(bus, Bucket.rollouts)).get(module))?.value;
  if (rollout?.status === "failed" && rollout.build === (await newestBuilt(bus, module))) {
    const done = await liftMarks(bus, {
      module,
      ...(input.why === undefined ? {} : { why: input.why }),
    });
    const steer = RolloutSteer.parse({
      build: rollout.build,
      action: "retry",
      attempt: rollout.attempt,
      by: bus.credential.user,
      why: input.why ?? "mesh retry",
      at: new Date().toISOString(),
    });
    await (await KvBucket.open(bus, Bucket.rolloutSteers)).put(module, steer);
    return {
      message: `${done.message}; the rollout of ${module} ${rollout.build} had halted, so it starts again from its canary (\`mesh rollout status ${module}\` shows it)`,
      result: { ...done.result, rollout: steer },
    };
  }
  return liftMarks(bus, input);
}

/** Lifts the failed marks of a module on one node or every node, and says what follows. */
export async function liftMarks(bus: MeshBus, input: RetryInput): Promise<Done> {
  const module = checkName("module", input.module);
  const node = input.node === undefined ? undefined : checkName("node", input.node);
  const t: Target = node === undefined ? { all: true } : { node };
  const key = targetModuleKey(t, module);
  const { marked, revision } = await readMarks(bus, module, node);
  const record: Retry = {
    haveRevision: revision,
    by: bus.credential.user,
    why: input.why ?? "",
    at: new Date().toISOString(),
  };
  await (await KvBucket.open(bus, Bucket.retries)).put(key, record);
  const where = node ?? "every node";
  const result = { key, haveRevision: revision, lifted: Object.fromEntries(marked) };
  if (marked.size === 0) {
    return {
      message: `retry ${module} on ${where}: no build of it is marked failing there; nothing changes`,
      result,
    };
  }
  const lifted = [...marked].map(([n, builds]) => `${n} (${builds.join(", ")})`).join(", ");
  const newest = await newestBuilt(bus, module);
  const then = [...marked.values()].some(
    (builds) => newest !== undefined && builds.includes(newest),
  )
    ? `the assigner wants the newest build${newest === undefined ? "" : ` ${newest}`} there again and the host starts it`
    : `no mark was on the newest build${newest === undefined ? "" : ` ${newest}`}, so what is wanted does not change`;
  return {
    message: `retry ${module} on ${where}: lifted the failed marks on ${lifted}; ${then} (\`mesh status\` shows how it goes)`,
    result,
  };
}

/** The build of the module's newest candidate that built, as the assigner's `newest` rule reads it. */
async function newestBuilt(bus: MeshBus, module: string): Promise<string | undefined> {
  const builds = await KvBucket.open(bus, Bucket.builds);
  let top: Build | undefined;
  for (const key of await builds.keys(`${module}.*`)) {
    const b = (await builds.get(key))?.value;
    if (b?.status === "built" && (top === undefined || b.candidate > top.candidate)) top = b;
  }
  return top?.build;
}

/** What `mesh unput` did and what the assigner does after it. */
export interface Unput {
  readonly key: string;
  readonly module: string;
  readonly node: string | undefined;
  /** Whether a put stood at the key (and was lifted). */
  readonly lifted: boolean;
  /** The keys of the module's other puts, which still hold. */
  readonly others: readonly string[];
}

/** What lifting a put really does, for `mesh unput`. */
export async function unputMessage(bus: MeshBus, unput: Unput): Promise<string> {
  const { key, module, node, lifted, others } = unput;
  // Only a mark on the newest build keeps it from being wanted; older marks change nothing.
  const newest = await newestBuilt(bus, module);
  const marked = new Map(
    [...(await readMarks(bus, module, node)).marked].filter(
      ([, builds]) => newest !== undefined && builds.includes(newest),
    ),
  );
  const still =
    others.length === 0
      ? ""
      : ` (but where its puts ${others.join(", ")} stand, they hold: \`mesh unput ${module} --node N\` lifts one)`;
  const base = lifted
    ? `lifted the put ${key}; the assigner wants the newest build of ${module} again${still}`
    : `no put stands at ${key}, so nothing changes; the assigner wants the newest build of ${module}${still}`;
  if (marked.size === 0) return `${base} (\`mesh wants --module ${module}\` shows it)`;
  const where = [...marked].map(([n, builds]) => `${n} (${builds.join(", ")})`).join(", ");
  return (
    `${base}, except where a failure marks it: ${where}. There the build it last ran healthy ` +
    `runs, or, with none, the failing build is kept and restarted; \`mesh retry ${module}` +
    `${node === undefined ? "" : ` --node ${node}`}\` lifts the marks`
  );
}
