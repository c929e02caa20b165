/**
 * Saying where modules run: `mesh assign|unassign` (the assignments bucket) and `mesh put|unput`
 * (pinning a build until lifted, through the assigner's own tool). The assigner turns both into
 * wants.
 */
import type { Command } from "commander";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { z } from "zod";
import {
  ALL_NODES,
  Bucket,
  ErrorCode,
  MeshError,
  checkName,
  parseTargetModuleKey,
  targetModuleKey,
  type Target,
} from "@mesh/protocol";
import { callAssignerTool } from "./assigner-tool.js";
import { requireModule } from "../../known.js";
import { readAll } from "../../read-bucket.js";
import { unputMessage } from "./retry.js";
import {
  act,
  answer,
  answerDone,
  connect,
  meshVerb,
  table,
  type Done,
  type ExitCode,
  type MeshOptions,
} from "../../verb.js";

export function registerAssignVerbs(program: Command): void {
  act(
    meshVerb(program, "assign", "Say where a module should run.")
      .argument("<module>", "a registered module")
      .option("--node <name>", "one node")
      .option("--all", "every node")
      .option("--force", "assign a module that is not registered yet"),
    (name: string, options: TargetOptions) => assignVerb(name, options, false),
  );
  act(
    meshVerb(program, "unassign", "Take a module's assignment away.")
      .argument("<module>")
      .option("--node <name>", "one node")
      .option("--all", "every node"),
    (name: string, options: TargetOptions) => assignVerb(name, options, true),
  );
  act(
    meshVerb(program, "assignments", "Where each module is assigned: every node, or named nodes.")
      .option("--module <name>", "only this module")
      .option("--node <name>", "only assignments that reach this node"),
    assignmentsVerb,
  );
  act(
    meshVerb(
      program,
      "put",
      "Pin a module to one build (on one node, or everywhere) until `mesh unput`.",
    )
      .argument("<module>")
      .argument("<build>")
      .option("--node <name>", "only this node (default: every node)")
      .option("--why <text>", "why, for the record"),
    putVerb,
  );
  act(
    meshVerb(
      program,
      "unput",
      "Lift a put: the newest build is wanted again, except where a failure marks it (see `mesh retry`).",
    )
      .argument("<module>")
      .option("--node <name>", "the node's own put (default: the put on every node)"),
    (name: string, options: PutOptions) => putVerb(name, undefined, options),
  );
}

function target(options: { node?: string; all?: boolean }, verb: string): Target {
  if (options.all === true && options.node !== undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `mesh ${verb} takes --node N or --all, not both; pick one`,
    );
  }
  if (options.all === true) return { all: true };
  if (options.node !== undefined) return { node: checkName("node", options.node) };
  throw new MeshError(
    ErrorCode.USAGE,
    `mesh ${verb} needs --node N (one node) or --all (every node)`,
  );
}

export const by = (bus: MeshBus): string => bus.credential.user;

export interface TargetOptions extends MeshOptions {
  readonly node?: string;
  readonly all?: boolean;
  readonly force?: boolean;
}

export async function assignVerb(
  module: string,
  options: TargetOptions,
  remove = false,
): Promise<ExitCode> {
  const t = target(options, remove ? "unassign" : "assign");
  await using bus = await connect(options);
  const done = await assign(bus, { module, target: t, remove, force: options.force === true });
  return answerDone(options, done);
}

/** `mesh assign|unassign` on a bus: the view's page does the same. */
export async function assign(
  bus: MeshBus,
  input: { module: string; target: Target; remove: boolean; force?: boolean },
): Promise<Done> {
  const { module, remove } = input;
  const key = targetModuleKey(input.target, module);
  if (!remove) await requireModule(bus, module, { force: input.force, forWhat: "assign it" });
  const bucket = await KvBucket.open(bus, Bucket.assignments);
  if (remove) await bucket.delete(key);
  else await bucket.put(key, { by: by(bus), at: new Date().toISOString() });
  return {
    message: remove ? `unassigned ${key}` : `assigned ${key}; the assigner writes the wants`,
    result: { key, assigned: !remove },
  };
}

export interface AssignmentsOptions extends MeshOptions {
  readonly module?: string;
  readonly node?: string;
}

/** One assignment as `mesh assignments` shows it. */
export interface AssignmentRow {
  readonly module: string;
  /** `all` for every node, else the node's name. */
  readonly node: string;
  readonly by: string;
  readonly at: string;
}

export async function assignmentsVerb(options: AssignmentsOptions): Promise<ExitCode> {
  if (options.module !== undefined) checkName("module", options.module);
  if (options.node !== undefined) checkName("node", options.node);
  await using bus = await connect(options);
  const rows = [...(await readAll(await KvBucket.open(bus, Bucket.assignments))).entries()]
    .flatMap(([key, a]): AssignmentRow[] => {
      const { target, module } = parseTargetModuleKey(key);
      return [{ module, node: "all" in target ? ALL_NODES : target.node, by: a.by, at: a.at }];
    })
    .filter(
      (r) =>
        (options.module === undefined || r.module === options.module) &&
        (options.node === undefined || r.node === ALL_NODES || r.node === options.node),
    )
    .sort((a, b) => (a.module === b.module ? cmp(a.node, b.node) : cmp(a.module, b.module)));
  return answer(options, { assignments: rows }, () =>
    rows.length === 0
      ? ["nothing is assigned; `mesh assign <module> --all` places a module on every node"]
      : table(
          ["module", "where", "by", "at"],
          rows.map((r) => [r.module, r.node === ALL_NODES ? "every node" : r.node, r.by, r.at]),
        ),
  );
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface PutOptions extends MeshOptions {
  readonly node?: string;
  readonly why?: string;
}

export async function putVerb(
  module: string,
  build: string | undefined,
  options: PutOptions,
): Promise<ExitCode> {
  const node = options.node === undefined ? undefined : checkName("node", options.node);
  await using bus = await connect(options);
  const done = await put(bus, {
    module,
    ...(build === undefined ? {} : { build }),
    ...(node === undefined ? {} : { node }),
    ...(options.why === undefined ? {} : { why: options.why }),
  });
  return answerDone(options, done);
}

/**
 * `mesh put|unput` on a bus (no build: unput): the view's page does the same. Both call the
 * assigner's tool (`mesh-assigner/put`, `/unput`; decision 0190), which checks and writes the put;
 * its refusals (a module not registered, a build it has not, one not built) come back coded.
 */
export async function put(
  bus: MeshBus,
  input: { module: string; build?: string; node?: string; why?: string },
): Promise<Done> {
  const { module, build } = input;
  const node = input.node === undefined ? undefined : checkName("node", input.node);
  const where = node === undefined ? {} : { node };
  if (build === undefined) {
    const answer = UnputAnswer.parse(
      await callAssignerTool(bus, "unput", { module: checkName("module", module), ...where }),
    );
    return {
      message: await unputMessage(bus, { ...answer, module, node }),
      result: { key: answer.key, put: null, lifted: answer.lifted, others: answer.others },
    };
  }
  const answer = PutAnswer.parse(
    await callAssignerTool(bus, "put", {
      module: checkName("module", module),
      build,
      ...where,
      ...(input.why === undefined ? {} : { why: input.why }),
      by: by(bus),
    }),
  );
  return {
    message: `put ${module} on ${node ?? "every node"} to ${answer.put} until \`mesh unput\``,
    result: { key: answer.key, put: answer.put },
  };
}

/** What the assigner's tools answer (their output schemas). */
const PutAnswer = z.object({ key: z.string(), put: z.string() });
const UnputAnswer = z.object({
  key: z.string(),
  lifted: z.boolean(),
  others: z.array(z.string()),
});
