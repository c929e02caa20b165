/**
 * Saying where modules run: `mesh assign|unassign` (the assignments bucket) and `mesh put|unput`
 * (pinning a build until lifted). The assigner turns both into wants.
 */
import type { Command } from "commander";
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  buildKey,
  checkName,
  targetModuleKey,
  type Target,
} from "@mesh/protocol";
import { unputMessage } from "./retry.js";
import { ExitCode, act, connect, meshVerb, out, printJson, type MeshOptions } from "../verb.js";

export function registerAssignVerbs(program: Command): void {
  for (const [verb, remove] of [
    ["assign", false],
    ["unassign", true],
  ] as const) {
    act(
      meshVerb(
        program,
        verb,
        remove ? "Take a module's assignment away." : "Say where a module should run.",
      )
        .argument("<module>")
        .option("--node <name>", "one node")
        .option("--all", "every node"),
      (name: string, options: TargetOptions) => assignVerb(name, options, remove),
    );
  }
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
}

export async function assignVerb(
  module: string,
  options: TargetOptions,
  remove = false,
): Promise<ExitCode> {
  const key = targetModuleKey(target(options, remove ? "unassign" : "assign"), module);
  await using bus = await connect(options);
  const bucket = await KvBucket.open(bus, Bucket.assignments);
  if (remove) await bucket.delete(key);
  else await bucket.put(key, { by: by(bus), at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, key, assigned: !remove });
  else out(remove ? `unassigned ${key}` : `assigned ${key}; the assigner writes the wants`);
  return ExitCode.ok;
}

export interface PutOptions extends MeshOptions {
  readonly node?: string;
  readonly why?: string;
}

export async function putVerb(
  module: string,
  build: string | undefined,
  options: PutOptions,
): Promise<ExitCode> {
  const t: Target =
    options.node === undefined ? { all: true } : { node: checkName("node", options.node) };
  const key = targetModuleKey(t, module);
  await using bus = await connect(options);
  const puts = await KvBucket.open(bus, Bucket.puts);
  if (build === undefined) {
    await puts.delete(key);
    if (options.json === true) printJson({ ok: true, key, put: null });
    else out(await unputMessage(bus, key, module, options.node));
    return ExitCode.ok;
  }
  const record = await (await KvBucket.open(bus, Bucket.builds)).get(buildKey(module, build));
  if (record === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module} has no build ${JSON.stringify(build)}; see \`mesh builds ${module}\``,
      { module },
    );
  }
  if (record.value.status !== "built") {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${module} build ${build} is ${record.value.status}, and only a built build can be put; pick one \`mesh builds ${module}\` lists as built`,
      { module },
    );
  }
  await puts.put(key, { build, by: by(bus), why: options.why ?? "", at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, key, put: build });
  else
    out(`put ${module} on ${"all" in t ? "every node" : t.node} to ${build} until \`mesh unput\``);
  return ExitCode.ok;
}
