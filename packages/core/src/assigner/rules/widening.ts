/**
 * Rule 8, widening: an advance to the newest build that widens what the module may read, call or
 * hold waits for an operator's yes (decision 0033). A put is the operator's own choice and a
 * set-back goes back to a build that ran, so only an advance to the newest asks; a first want of
 * a module asks nothing (nothing to widen from).
 */
import { createHash } from "node:crypto";
import type { Manifest } from "@mesh/protocol";
import { canonicalJson } from "../../fingerprint.js";
import type { Cell, Decision, PendingAsk, Proposal, Usable } from "../model.js";
import type { CellRule } from "./rule.js";

export const widening: CellRule<"widening"> = {
  name: "widening",
  scope: "cell",
  decide(cell, decided) {
    if (decided.kind !== "want" || decided.proposal.rule !== "newest") return decided;
    const proposal = decided.proposal;
    const before = cell.index?.usable.get(cell.previous?.build ?? "");
    if (before === undefined || before.build.build === proposal.usable.build.build) return decided;
    const widened = widen(before.manifest, proposal.usable.manifest);
    if (widened.length === 0) return decided;
    return held(cell, proposal, before, widened);
  },
};

function held(cell: Cell, proposal: Proposal, before: Usable, widened: string[]): Decision {
  const { module } = cell;
  const build = proposal.usable.build.build;
  const id = askId(module, build, widened);
  const what = widened.join(", ");
  const answer = cell.snapshot.answers.get(id)?.answer;
  if (answer === "yes") {
    const reason = `${proposal.reason}; it widens (${what}) and ask ${id} was answered yes`;
    return { kind: "want", proposal: { ...proposal, reason } };
  }
  const ask: PendingAsk = {
    id,
    module,
    build,
    what: `${module} build ${build} widens what it may ${what}; answer yes to let it run`,
  };
  const why =
    answer === "no"
      ? `ask ${id} was answered no: ${module} build ${build} widens what it may ${what}`
      : `${module} build ${build} widens what it may ${what} and waits for a yes to ask ${id}`;
  if (cell.marks.has(before.build.build)) {
    return { kind: "none", unwanted: { rule: "widening", reason: why }, ask };
  }
  const reason = `${why}; the previous want ${before.build.build} stands`;
  return { kind: "want", proposal: { usable: before, rule: "widening", reason }, ask };
}

/** What a new manifest may read, write, call or hold that the old one may not, sorted. */
export function widen(before: Manifest, after: Manifest): string[] {
  const out: string[] = [];
  const reads = new Set(before.reads);
  for (const r of after.reads) if (!reads.has(r)) out.push(`read ${r}`);
  // A mesh part's writes of the mesh's own buckets widen it as much as a read (decision 0122).
  const writes = new Set(before.writes ?? []);
  for (const w of after.writes ?? []) if (!writes.has(w)) out.push(`write ${w}`);
  const calls = new Set(before.calls);
  for (const c of after.calls) if (!calls.has(c)) out.push(`call ${c}`);
  const secrets = new Set(Object.keys(before["own-secrets"]));
  for (const s of Object.keys(after["own-secrets"])) if (!secrets.has(s)) out.push(`hold ${s}`);
  return out.sort();
}

/** The id of the ask about one widening: the same widening of the same build always has the same id. */
export function askId(module: string, build: string, widened: readonly string[]): string {
  const digest = createHash("sha256")
    .update(canonicalJson({ module, build, widened: [...widened].sort() }))
    .digest("hex");
  return `w-${digest.slice(0, 20)}`;
}
