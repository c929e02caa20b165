/**
 * `mesh status`: the mesh at a glance, the same facts the view shows — nodes (present or gone,
 * since when), modules × nodes with want, have and health, differences with their reasons, open
 * asks, and the latest conditions. One read of each bucket and of the conditions stream; it does
 * not follow changes (the view does). Present or gone, and each assigned cell's state, reason and
 * fix, come from core's read model of the fleet (`readFleet`), which the view uses too.
 */
import type { Command } from "commander";
import { KvBucket, readStream, type MeshBus } from "@mesh/bus";
import { readFleet, type CellReason, type CellState, type FleetState } from "@mesh/core";
import {
  Bucket,
  Condition,
  PRESENCE_GONE_MS,
  Stream,
  Subject,
  parseNodeModuleKey,
  type Ask,
  type Difference,
  type Have,
  type Presence,
  type Want,
} from "@mesh/protocol";
import { connectToMesh } from "../find-mesh.js";
import { ExitCode, printJson } from "../output.js";
import { readAll } from "../read-bucket.js";
import { act, meshVerb, type MeshOptions } from "../verb.js";

/** A heartbeat older than this counts as gone (protocol's one threshold, also the view's). */
export { PRESENCE_GONE_MS };
/** How many conditions status shows (`mesh conditions` shows them all). */
const RECENT_CONDITIONS = 10;

export interface StatusNode {
  readonly node: string;
  readonly present: boolean;
  /** The last heartbeat, or null for a node known only from its wants or haves. */
  readonly heartbeat: string | null;
  /**
   * Since when it is in its state: the node has no start time of its own, so both present and
   * gone date from the last heartbeat (gone: last heard from then).
   */
  readonly since: string | null;
  readonly facts: Presence["facts"] | null;
}

export interface StatusCell {
  readonly node: string;
  readonly module: string;
  readonly want: Pick<Want, "build" | "rule" | "reason"> | null;
  readonly have: Pick<Have, "build" | "health" | "restarts" | "since" | "lastError"> | null;
  /** The have's health, or `absent` when nothing runs there yet. */
  readonly health: Have["health"] | "absent";
  readonly differs: boolean;
  /** The read model's state; `leaving` for a cell nothing assigns any more. */
  readonly state: CellState | "leaving";
  readonly reason: string;
  /** The command that fixes it, for every state but healthy. */
  readonly fix?: string;
}

export interface StatusReport {
  readonly at: string;
  readonly nodes: StatusNode[];
  readonly modules: StatusCell[];
  readonly differences: Array<{ node: string; module: string } & Difference>;
  readonly asks: Ask[];
  readonly conditions: Array<Condition & { subject: string }>;
  /** Every assigned cell that is not running, with its reason and fix. */
  readonly attention: CellReason[];
}

/** Reads everything status shows. `now` decides who is gone. */
export async function readStatus(
  bus: MeshBus,
  options: { readonly now: Date; readonly signal?: AbortSignal },
): Promise<StatusReport> {
  const { state, conditions } = await readFleetState(bus, options);
  return statusOf(state, conditions, options.now);
}

/** What status shows of a fleet's state: also what `mesh wants` and `mesh differences` say. */
export function statusOf(
  state: FleetState,
  conditions: Array<Condition & { subject: string }>,
  now: Date,
): StatusReport {
  const { presence, have: haves, wants, differences, asks, answers } = state;
  const fleet = readFleet(state);
  const reasons = new Map(fleet.cells.map((c) => [`${c.node}.${c.module}`, c]));

  const nodeNames = new Set(fleet.nodes.map((n) => n.node));
  const cells = new Map<string, { node: string; module: string }>();
  for (const key of [...reasons.keys(), ...wants.keys(), ...haves.keys()]) {
    const parsed = safeNodeModule(key);
    if (parsed === undefined) continue;
    nodeNames.add(parsed.node);
    cells.set(key, parsed);
  }
  const nodes = [...nodeNames].sort().map((node): StatusNode => {
    const p = presence.get(node);
    if (p === undefined) return { node, present: false, heartbeat: null, since: null, facts: null };
    const present = fleet.nodes.find((n) => n.node === node)?.state === "present";
    return {
      node,
      present,
      heartbeat: p.heartbeat,
      since: p.heartbeat,
      facts: p.facts,
    };
  });

  const modules = [...cells.entries()]
    .sort(([a], [b]) => compareCell(cells.get(a), cells.get(b)))
    .map(([key, { node, module }]): StatusCell => {
      const w = wants.get(key);
      const h = haves.get(key);
      return {
        node,
        module,
        want: w === undefined ? null : { build: w.build, rule: w.rule, reason: w.reason },
        have:
          h === undefined
            ? null
            : {
                ...(h.build === undefined ? {} : { build: h.build }),
                health: h.health,
                restarts: h.restarts,
                since: h.since,
                ...(h.lastError === undefined ? {} : { lastError: h.lastError }),
              },
        health: h?.health ?? "absent",
        differs: differences.has(key),
        ...cellState(reasons.get(key)),
      };
    });

  return {
    at: now.toISOString(),
    nodes,
    modules,
    differences: [...differences.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([key, d]) => {
        const parsed = safeNodeModule(key);
        return parsed === undefined ? [] : [{ ...parsed, ...d }];
      }),
    asks: [...asks.values()].filter((a) => !answers.has(a.id)).sort((a, b) => cmp(a.at, b.at)),
    // A resolved condition's cause has ended: not news (`mesh conditions` still lists it).
    conditions: conditions.filter((c) => c.resolved !== true).slice(0, RECENT_CONDITIONS),
    attention: [...fleet.attention.cells],
  };
}

/** Every bucket the read model reads, and the conditions, as they stand. */
export async function readFleetState(
  bus: MeshBus,
  options: { readonly now: Date; readonly signal?: AbortSignal },
): Promise<{ state: FleetState; conditions: Array<Condition & { subject: string }> }> {
  const read = <B extends Bucket>(bucket: B) => KvBucket.open(bus, bucket).then((b) => readAll(b));
  const [presence, wants, have, differences, asks, answers] = await Promise.all([
    read(Bucket.presence),
    read(Bucket.wants),
    read(Bucket.have),
    read(Bucket.differences),
    read(Bucket.asks),
    read(Bucket.answers),
  ]);
  const [assignments, registrations, builds, compositions, conditions] = await Promise.all([
    read(Bucket.assignments),
    read(Bucket.modules),
    read(Bucket.builds),
    read(Bucket.compositions),
    readConditions(bus, options.signal === undefined ? {} : { signal: options.signal }),
  ]);
  const now = options.now.getTime();
  const state: FleetState = {
    now,
    presence,
    assignments,
    registrations,
    builds,
    wants,
    have,
    differences,
    compositions,
    asks,
    answers,
    conditions,
  };
  return { state, conditions };
}

/** A cell's state from the read model; a cell it does not list is assigned nowhere any more. */
function cellState(c: CellReason | undefined): Pick<StatusCell, "state" | "reason" | "fix"> {
  if (c === undefined) {
    return { state: "leaving", reason: "not assigned here any more: the mesh takes it away" };
  }
  return { state: c.state, reason: c.reason, ...(c.fix === undefined ? {} : { fix: c.fix }) };
}

/** Every condition the stream keeps (the last per module and name), newest first. */
export async function readConditions(
  bus: MeshBus,
  options: { readonly module?: string; readonly signal?: AbortSignal } = {},
): Promise<Array<Condition & { subject: string }>> {
  const ac = new AbortController();
  const stop = () => ac.abort();
  options.signal?.addEventListener("abort", stop, { once: true });
  const found: Array<Condition & { subject: string }> = [];
  try {
    for await (const event of readStream(bus, Stream.conditions, {
      filter:
        options.module === undefined
          ? `${Subject.conditionsPrefix}.>`
          : `${Subject.conditionsPrefix}.${options.module}.*`,
      schema: Condition,
      signal: ac.signal,
    })) {
      if (event.type === "current") break;
      if (event.type === "message") found.push({ ...event.value, subject: event.subject });
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
    ac.abort();
  }
  return found.sort((a, b) => cmp(b.at, a.at));
}

export function registerStatusVerb(program: Command): void {
  act(
    meshVerb(
      program,
      "status",
      "The mesh at a glance: nodes, modules × nodes (want, have, health), differences, open asks, recent conditions.",
    ),
    statusVerb,
  );
}

export async function statusVerb(options: MeshOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const report = await readStatus(bus, { now: new Date() });
  if (options.json === true) {
    printJson({ ok: true, ...report });
    return ExitCode.ok;
  }
  printStatus(report);
  return ExitCode.ok;
}

function printStatus(report: StatusReport): void {
  const lines: string[] = [];
  const now = Date.parse(report.at);
  lines.push("NODES");
  if (report.nodes.length === 0)
    lines.push("  no node has joined; `mesh up` or `mesh join` adds one");
  else
    lines.push(
      ...table(
        ["node", "state", "last heartbeat", "machine", "host"],
        report.nodes.map((n) => [
          n.node,
          n.heartbeat === null ? "never seen" : n.present ? "present" : "gone",
          n.since === null ? "-" : `${n.since} (${ago(now, n.since)})`,
          machineOf(n.facts),
          n.facts === null ? "-" : `${n.facts.hostname} ${n.facts.os}/${n.facts.arch}`,
        ]),
      ),
    );

  lines.push("", "MODULES");
  if (report.modules.length === 0)
    lines.push("  nothing is wanted or running; `mesh assign <module> --all` places one");
  else
    lines.push(
      ...table(
        ["module", "node", "want", "rule", "have", "health", "restarts", "state"],
        report.modules.map((c) => [
          c.module,
          c.node,
          c.want?.build ?? "-",
          c.want?.rule ?? "-",
          c.have?.build ?? "-",
          c.health,
          c.have === null ? "-" : String(c.have.restarts),
          `${c.state}${c.differs ? ", differs" : ""}`,
        ]),
      ),
    );

  lines.push("", "NEEDS ATTENTION");
  if (report.attention.length === 0)
    lines.push("  nothing: every assigned module runs healthy or is starting");
  for (const c of report.attention) {
    lines.push(`  ${c.node}/${c.module}: not running because ${c.reason}`);
    if (c.fix !== undefined) lines.push(`      fix: ${c.fix}`);
  }

  lines.push("", "DIFFERENCES");
  if (report.differences.length === 0) lines.push("  none: every node has what it should");
  for (const d of report.differences) {
    lines.push(
      `  ${d.module} on ${d.node}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`,
    );
    for (const reason of d.reasons) lines.push(`      ${reason}`);
  }

  lines.push("", "OPEN ASKS");
  if (report.asks.length === 0) lines.push("  none");
  for (const a of report.asks)
    lines.push(`  ${a.id}: ${a.what} (nodes: ${a.nodes.join(", ")}) — mesh answer ${a.id} yes|no`);

  lines.push("", "RECENT CONDITIONS");
  if (report.conditions.length === 0) lines.push("  none");
  else
    lines.push(
      ...table(
        ["at", "level", "module", "node", "message"],
        report.conditions.map((c) => [
          c.at,
          c.level,
          `${c.module}/${c.name}`,
          c.node ?? "-",
          c.message,
        ]),
      ),
    );
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** How the machine is set up, as its presence says: adopted, and its operator account. */
function machineOf(facts: StatusNode["facts"]): string {
  if (facts === null) return "-";
  const parts = [
    ...(facts.adopted === true ? ["adopted"] : []),
    ...(facts.account === undefined ? [] : [`account ${facts.account}`]),
  ];
  return parts.length === 0 ? "-" : parts.join(", ");
}

/** Rows as aligned columns under a header, indented by two; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `  ${cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")}`.trimEnd();
  return [line(header.map((h) => h.toUpperCase())), ...rows.map(line)];
}

function ago(now: number, at: string): string {
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  if (s < 172_800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function compareCell(
  a: { node: string; module: string } | undefined,
  b: { node: string; module: string } | undefined,
): number {
  return cmp(
    `${a?.module ?? ""}\u0000${a?.node ?? ""}`,
    `${b?.module ?? ""}\u0000${b?.node ?? ""}`,
  );
}

/** A key the layout says is `<node>.<module>`; a malformed one is left out, not fatal. */
function safeNodeModule(key: string): { node: string; module: string } | undefined {
  try {
    return parseNodeModuleKey(key);
  } catch {
    return undefined;
  }
}
