/**
 * Reading what the assigner decided and answering it: `mesh wants`, `mesh differences`,
 * `mesh asks` and `mesh answer`. Wants and differences say each cell's state, reason and fix from
 * core's read model of the fleet, as `mesh status` and the view do.
 */
import type { Command } from "commander";
import { KvBucket } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError, checkName } from "@mesh/protocol";
import { readAll } from "../../read-bucket.js";
import { ExitCode, act, connect, meshVerb, out, printJson, type MeshOptions } from "../../verb.js";
import { answerAsk } from "@mesh/view";
import { by } from "./assign.js";
import { readFleetState, statusOf } from "../status/status.js";

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

/**
 * What each node should run: every want, and every assigned (node, module) without one, each
 * with the read model's state, reason and fix — the same words `mesh status` says.
 */
export async function wantsVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const now = new Date();
  const { state, conditions } = await readFleetState(bus, { now });
  const cells = statusOf(state, conditions, now).modules.filter(
    (c) => matches(`${c.node}.${c.module}`, options) && (c.want !== null || c.state !== "leaving"),
  );
  if (options.json === true) {
    const wants = [...state.wants].filter(([k]) => matches(k, options)).sort();
    printJson({ ok: true, wants: Object.fromEntries(wants), cells });
    return ExitCode.ok;
  }
  if (cells.length === 0)
    out("nothing is wanted; assign a module with `mesh assign <module> --all`");
  for (const c of cells) {
    const w = c.want;
    out(
      `${c.node}.${c.module}: ${w === null ? "nothing wanted" : `${w.build}  [${w.rule}] ${w.reason}`}`,
    );
    if (c.state === "starting") out(`    starting: ${c.reason}`);
    if (c.state === "not-running") out(`    not running because ${c.reason}`);
    if (c.state === "leaving") out(`    ${c.reason}`);
    if (c.fix !== undefined) out(`    fix: ${c.fix}`);
  }
  return ExitCode.ok;
}

/**
 * Where want, composed and have differ, and every assigned module that does not run although
 * nothing differs (waiting for a secret, an answer, a build): what `mesh status` names under
 * NEEDS ATTENTION, so "no differences" here means the same as "nothing" there.
 */
export async function differencesVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const now = new Date();
  const { state, conditions } = await readFleetState(bus, { now });
  const report = statusOf(state, conditions, now);
  const diffs = [...state.differences].filter(([k]) => matches(k, options)).sort();
  const fixes = new Map(report.attention.map((c) => [`${c.node}.${c.module}`, c.fix]));
  const notRunning = report.attention.filter(
    (c) =>
      matches(`${c.node}.${c.module}`, options) && !state.differences.has(`${c.node}.${c.module}`),
  );
  if (options.json === true) {
    printJson({ ok: true, differences: Object.fromEntries(diffs), notRunning });
    return ExitCode.ok;
  }
  if (diffs.length === 0 && notRunning.length === 0)
    out("no differences: every node has what it should");
  for (const [key, d] of diffs) {
    out(`${key}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`);
    for (const r of d.reasons) out(`    ${r}`);
    const fix = fixes.get(key);
    if (fix !== undefined) out(`    fix: ${fix}`);
  }
  for (const c of notRunning) {
    out(`${c.node}.${c.module}: not running, though want, composed and have agree`);
    out(`    because ${c.reason}`);
    if (c.fix !== undefined) out(`    fix: ${c.fix}`);
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
  // The call the view's page makes too.
  const done = await answerAsk(bus, { id, answer, by: by(bus) });
  if (options.json === true) printJson({ ok: true, id, answer });
  else out(done.message);
  return ExitCode.ok;
}
