/**
 * Reading what the assigner decided and answering it: `mesh wants`, `mesh differences`,
 * `mesh asks` and `mesh answer`.
 */
import type { Command } from "commander";
import { KvBucket } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError, checkName } from "@mesh/protocol";
import { readAll } from "../read-bucket.js";
import { ExitCode, act, connect, meshVerb, out, printJson, type MeshOptions } from "../verb.js";
import { by } from "./assign.js";

export function registerDecisionVerbs(program: Command): void {
  for (const [verb, run, what] of [
    ["wants", wantsVerb, "What each node should run, by which rule and why."],
    ["differences", differencesVerb, "Where want, composed and have differ, and why."],
  ] as const) {
    act(
      meshVerb(program, verb, what)
        .option("--node <name>", "only this node")
        .option("--module <name>", "only this module"),
      run,
    );
  }
  act(meshVerb(program, "asks", "Questions that wait for an operator's answer."), asksVerb);
  act(
    meshVerb(program, "answer", "Answer an ask yes or no.")
      .argument("<id>")
      .argument("<answer>", "yes or no"),
    answerVerb,
  );
}

export interface ListOptions extends MeshOptions {
  readonly node?: string;
  readonly module?: string;
}

const matches = (key: string, options: ListOptions): boolean => {
  const [node, module] = key.split(".");
  return (
    (options.node === undefined || node === options.node) &&
    (options.module === undefined || module === options.module)
  );
};

export async function wantsVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const wants = [...(await readAll(await KvBucket.open(bus, Bucket.wants))).entries()]
    .filter(([k]) => matches(k, options))
    .sort();
  if (options.json === true) {
    printJson({ ok: true, wants: Object.fromEntries(wants) });
    return ExitCode.ok;
  }
  if (wants.length === 0)
    out("nothing is wanted; assign a module with `mesh assign <module> --all`");
  for (const [key, w] of wants) out(`${key}: ${w.build}  [${w.rule}] ${w.reason}`);
  return ExitCode.ok;
}

export async function differencesVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const diffs = [...(await readAll(await KvBucket.open(bus, Bucket.differences))).entries()]
    .filter(([k]) => matches(k, options))
    .sort();
  if (options.json === true) {
    printJson({ ok: true, differences: Object.fromEntries(diffs) });
    return ExitCode.ok;
  }
  if (diffs.length === 0) out("no differences: every node has what it should");
  for (const [key, d] of diffs) {
    out(`${key}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`);
    for (const r of d.reasons) out(`    ${r}`);
  }
  return ExitCode.ok;
}

export async function asksVerb(options: MeshOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const asks = await readAll(await KvBucket.open(bus, Bucket.asks));
  const answers = await readAll(await KvBucket.open(bus, Bucket.answers));
  const rows = [...asks.values()].map((a) => ({ ...a, answer: answers.get(a.id)?.answer ?? null }));
  if (options.json === true) {
    printJson({ ok: true, asks: rows });
    return ExitCode.ok;
  }
  if (rows.length === 0) out("no asks wait for an answer");
  for (const a of rows)
    out(
      `${a.id}: ${a.what} (nodes: ${a.nodes.join(", ")})${a.answer === null ? " — answer with `mesh answer " + a.id + " yes|no`" : ` — answered ${a.answer}`}`,
    );
  return ExitCode.ok;
}

export async function answerVerb(
  id: string,
  answer: string,
  options: MeshOptions,
): Promise<ExitCode> {
  checkName("ask", id);
  if (answer !== "yes" && answer !== "no") {
    throw new MeshError(
      ErrorCode.USAGE,
      `the answer ${JSON.stringify(answer)} is not yes or no; write \`mesh answer ${id} yes\` or \`… no\``,
    );
  }
  await using bus = await connect(options);
  const ask = await (await KvBucket.open(bus, Bucket.asks)).get(id);
  if (ask === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no ask ${JSON.stringify(id)} waits for an answer; see \`mesh asks\``,
      { key: id },
    );
  }
  await (
    await KvBucket.open(bus, Bucket.answers)
  ).put(id, { answer, by: by(bus), at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, id, answer });
  else out(`answered ${answer} to ${id}: ${ask.value.what}`);
  return ExitCode.ok;
}
