/**
 * `mesh status` as text: the summary first (its size grows with the modules, not the nodes),
 * then a page of each list with a line saying how many more there are and how to see them.
 * Nothing here spreads a list into a call's arguments: a fleet of 10,000 nodes × 20 modules is
 * 200,000 rows, more than a call's arguments may hold.
 */
import type { StatusNode, StatusReport } from "./status-report.js";
import { moreLine, type StatusQuery } from "./status-page.js";
import { table } from "../../verb.js";

export function printStatus(report: StatusReport, query: StatusQuery): void {
  const sections = [
    summarySection(report),
    nodesSection(report, query),
    modulesSection(report, query),
    attentionSection(report, query),
    differencesSection(report, query),
    asksSection(report),
    conditionsSection(report),
  ];
  process.stdout.write(`${sections.map((lines) => lines.join("\n")).join("\n\n")}\n`);
}

/** A table's columns: each one's header, and what its cell shows of an item. */
type Columns<T> = Readonly<Record<string, (item: T) => string>>;

/** The table of `items`, a row each, with `columns` in their order. */
function tableOf<T>(items: readonly T[], columns: Columns<T>): string[] {
  const cells = Object.values(columns);
  return table(
    Object.keys(columns),
    items.map((item) => cells.map((cell) => cell(item))),
  );
}

/**
 * A section whose body is a table: its title, the table, or a line saying why it is empty, then
 * the line saying how many more there are (when there are more).
 */
function tableSection<T>(
  title: string,
  empty: string,
  items: readonly T[],
  columns: Columns<T>,
  more?: string,
): string[] {
  const lines = [title];
  if (items.length === 0) lines.push(empty);
  else for (const line of tableOf(items, columns)) lines.push(line);
  return withMore(lines, more);
}

/**
 * A table section showing one page of a list: when the page has no rows, `none` if the whole list
 * is empty, else that this page has none; then how many more there are.
 */
function pageSection<T>(
  title: string,
  none: string,
  items: readonly T[],
  columns: Columns<T>,
  page: { readonly total: number; readonly query: StatusQuery },
): string[] {
  const empty = page.total === 0 ? none : "  none on this page";
  return tableSection(title, empty, items, columns, moreLine(items.length, page.total, page.query));
}

/** The lines, then the line saying how many more there are, when there are more. */
function withMore(lines: string[], more: string | undefined): string[] {
  if (more !== undefined) lines.push(more);
  return lines;
}

function summarySection(report: StatusReport): string[] {
  const { summary } = report;
  const n = summary.nodes;
  const c = summary.cells;
  const lines = [
    "SUMMARY",
    `  nodes: ${n.total} (${n.present} present, ${n.gone} gone, ${n.never} never seen)`,
    `  assigned: ${c.assigned} (${c.healthy} healthy, ${c.starting} starting, ${c.notRunning} not running); leaving: ${c.leaving}`,
    sourceLine(report),
  ];
  if (summary.modules.length === 0) return lines;
  const columns: Columns<(typeof summary.modules)[number]> = {
    module: (m) => m.module,
    assigned: (m) => String(m.assigned),
    healthy: (m) => String(m.healthy),
    starting: (m) => String(m.starting),
    "not running": (m) => String(m.notRunning),
  };
  for (const line of tableOf(summary.modules, columns)) lines.push(line);
  return lines;
}

function nodesSection(report: StatusReport, query: StatusQuery): string[] {
  const now = Date.parse(report.at);
  return pageSection(
    "NODES",
    "  no node has joined; `mesh up` or `mesh join` adds one",
    report.nodes,
    {
      node: (node) => node.node,
      state: (node) => (node.heartbeat === null ? "never seen" : node.present ? "present" : "gone"),
      "last heartbeat": (node) =>
        node.since === null ? "-" : `${node.since} (${ago(now, node.since)})`,
      machine: (node) => machineOf(node.facts),
      host: ({ facts }) => (facts === null ? "-" : `${facts.hostname} ${facts.os}/${facts.arch}`),
    },
    { total: report.page.totals.nodes, query },
  );
}

function modulesSection(report: StatusReport, query: StatusQuery): string[] {
  return pageSection(
    "MODULES",
    "  nothing is wanted or running; `mesh assign <module> --all` places one",
    report.modules,
    {
      module: (cell) => cell.module,
      node: (cell) => cell.node,
      want: (cell) => cell.want?.build ?? "-",
      rule: (cell) => cell.want?.rule ?? "-",
      have: (cell) => cell.have?.build ?? "-",
      health: (cell) => cell.health,
      restarts: (cell) => (cell.have === null ? "-" : String(cell.have.restarts)),
      state: (cell) => `${cell.state}${cell.differs ? ", differs" : ""}`,
    },
    { total: report.page.totals.modules, query },
  );
}

function attentionSection(report: StatusReport, query: StatusQuery): string[] {
  const lines = ["NEEDS ATTENTION"];
  if (report.attention.length === 0)
    lines.push("  nothing: every assigned module runs healthy or is starting");
  for (const a of report.attention) {
    lines.push(`  ${a.node}/${a.module}: not running because ${a.reason}`);
    if (a.fix !== undefined) lines.push(`      fix: ${a.fix}`);
  }
  return withMore(lines, moreLine(report.attention.length, report.page.totals.attention, query));
}

function differencesSection(report: StatusReport, query: StatusQuery): string[] {
  const { totals } = report.page;
  const lines = ["DIFFERENCES"];
  if (report.differences.length === 0)
    lines.push(
      totals.attention === 0
        ? "  none: every node has what it should"
        : "  none between want, composed and have (what does not run is under NEEDS ATTENTION)",
    );
  for (const d of report.differences) {
    lines.push(
      `  ${d.module} on ${d.node}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`,
    );
    for (const reason of d.reasons) lines.push(`      ${reason}`);
  }
  return withMore(lines, moreLine(report.differences.length, totals.differences, query));
}

function asksSection(report: StatusReport): string[] {
  const lines = ["OPEN ASKS"];
  if (report.asks.length === 0) lines.push("  none");
  for (const a of report.asks)
    lines.push(`  ${a.id}: ${a.what} (nodes: ${a.nodes.join(", ")}) — mesh answer ${a.id} yes|no`);
  return lines;
}

function conditionsSection(report: StatusReport): string[] {
  return tableSection("RECENT CONDITIONS", "  none", report.conditions, {
    at: (k) => k.at,
    level: (k) => k.level,
    module: (k) => `${k.module}/${k.name}`,
    node: (k) => k.node ?? "-",
    message: (k) => k.message,
  });
}

/** Where the numbers come from: the assigner's summary (and how old it is), or every bucket. */
function sourceLine({ source, at }: StatusReport): string {
  if (source.kind === "every-bucket") return `  read from every bucket: ${source.why}`;
  // Written only when it changed (decision 0120): its age is the fleet's last move, not a sign of
  // a stopped assigner.
  return `  counted by the assigner at ${source.at} (${ago(Date.parse(at), source.at)}), its last change; the rows below are read now`;
}

/** How the machine is set up, as its presence says: adopted, and its operator account. */
function machineOf(facts: StatusNode["facts"]): string {
  if (facts === null) return "-";
  const parts: string[] = [];
  if (facts.adopted === true) parts.push("adopted");
  if (facts.account !== undefined) parts.push(`account ${facts.account}`);
  return parts.length === 0 ? "-" : parts.join(", ");
}

function ago(now: number, at: string): string {
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  if (s < 172_800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}
