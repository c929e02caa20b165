/**
 * Reading what the assigner decided and answering it: `mesh wants`, `mesh differences`,
 * `mesh asks` and `mesh answer`. Wants and differences say each cell's state, reason and fix from
 * core's read model of the fleet, as `mesh status` and the view do.
 */
import type { Command } from "commander";
import { KvBucket, readNodeKeys } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError, checkName } from "@mesh/protocol";
import { readAll } from "../../read-bucket.js";
import { ExitCode, act, connect, meshVerb, out, printJson, type MeshOptions } from "../../verb.js";
import { answerAsk } from "@mesh/view";
import { by } from "./assign.js";
import { pagingOptions, readStatus, statusQuery, type StatusOptions } from "../status/status.js";
import { moreLine, type StatusQuery } from "../status/status-page.js";

export function registerDecisionVerbs(program: Command): void {
  for (const [verb, run, what] of [
    ["wants", wantsVerb, "What each node should run, by which rule and why."],
    ["differences", differencesVerb, "Where want, composed and have differ, and why."],
  ] as const) {
    act(pagingOptions(meshVerb(program, verb, what), "rows"), run);
  }
  act(meshVerb(program, "asks", "Questions that wait for an operator's answer."), asksVerb);
  act(
    meshVerb(program, "answer", "Answer an ask yes or no.")
      .argument("<id>")
      .argument("<answer>", "yes or no"),
    answerVerb,
  );
}

export type ListOptions = StatusOptions;

/**
 * What each node should run: every want, and every assigned (node, module) without one, each
 * with the read model's state, reason and fix — the same words `mesh status` says. A page of
 * them (`--from`, `--limit`), read as status reads its cells: by key on a large fleet (decision
 * 0218), so only the page's wants are read.
 */
export async function wantsVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const query = statusQuery(options);
  const report = await readStatus(bus, { now: new Date(), query });
  const cells = report.modules.filter((c) => c.want !== null || c.state !== "leaving");
  if (options.json === true) {
    const { wants } = await readNodeKeys(bus, {
      nodes: [],
      compositions: [],
      cells: cells.filter((c) => c.want !== null),
    });
    const sorted = [...wants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    printJson({ ok: true, wants: Object.fromEntries(sorted), cells, page: report.page });
    return ExitCode.ok;
  }
  if (
    cells.length === 0 &&
    query.from === 0 &&
    report.modules.length === report.page.totals.modules
  )
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
  more("wants", report.modules.length, report.page.totals.modules, query);
  return ExitCode.ok;
}

/**
 * Where want, composed and have differ, and every assigned module that does not run although
 * nothing differs (waiting for a secret, an answer, a build): what `mesh status` names under
 * NEEDS ATTENTION, so "no differences" here means the same as "nothing" there. A page of each
 * (`--from`, `--limit`), read as status reads them (decision 0218).
 */
export async function differencesVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const query = statusQuery(options);
  const report = await readStatus(bus, { now: new Date(), query });
  const diffs = report.differences.map(
    ({ node, module, ...d }) => [`${node}.${module}`, d] as const,
  );
  const fixes = new Map(report.attention.map((c) => [`${c.node}.${c.module}`, c.fix]));
  // Whether each cell needing attention differs: its own key, read by key.
  const { differences: differing } = await readNodeKeys(bus, {
    nodes: [],
    compositions: [],
    cells: report.attention,
  });
  const notRunning = report.attention.filter((c) => !differing.has(`${c.node}.${c.module}`));
  if (options.json === true) {
    printJson({ ok: true, differences: Object.fromEntries(diffs), notRunning, page: report.page });
    return ExitCode.ok;
  }
  const { totals } = report.page;
  if (totals.differences === 0 && totals.attention === 0)
    out("no differences: every node has what it should");
  for (const [key, d] of diffs) {
    out(`${key}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`);
    for (const r of d.reasons) out(`    ${r}`);
    const fix = fixes.get(key);
    if (fix !== undefined) out(`    fix: ${fix}`);
  }
  more("differences", diffs.length, totals.differences, query);
  for (const c of notRunning) {
    out(`${c.node}.${c.module}: not running, though want, composed and have agree`);
    out(`    because ${c.reason}`);
    if (c.fix !== undefined) out(`    fix: ${c.fix}`);
  }
  more("differences", report.attention.length, totals.attention, query);
  return ExitCode.ok;
}

/** Says how many rows of a list are left past the page, and the command for the next. */
function more(verb: string, shown: number, total: number, query: StatusQuery): void {
  const line = moreLine(shown, total, query);
  if (line !== undefined) out(line.replace("mesh status", `mesh ${verb}`));
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
