/**
 * `mesh status`: the mesh at a glance, the same facts the view shows — nodes (present or gone,
 * since when), modules × nodes with want, have and health, differences with their reasons, open
 * asks, and the latest conditions. One read of each bucket and of the conditions stream; it does
 * not follow changes (the view does).
 */
import { KvBucket, readStream, type MeshBus } from "@mesh/bus";
import { DEFAULT_HEARTBEAT_MS } from "@mesh/host";
import {
  Bucket,
  Condition,
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
import { readAll, type VerbOptions } from "./delivery.js";

/** A heartbeat older than this counts as gone: three missed beats, not one late one. */
export const PRESENCE_GONE_MS = 3 * DEFAULT_HEARTBEAT_MS;
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
}

export interface StatusReport {
  readonly at: string;
  readonly nodes: StatusNode[];
  readonly modules: StatusCell[];
  readonly differences: Array<{ node: string; module: string } & Difference>;
  readonly asks: Ask[];
  readonly conditions: Array<Condition & { subject: string }>;
}

/** Reads everything status shows. `now` decides who is gone. */
export async function readStatus(
  bus: MeshBus,
  options: { readonly now: Date; readonly signal?: AbortSignal },
): Promise<StatusReport> {
  const [presence, wants, haves, differences, asks, answers, conditions] = await Promise.all([
    KvBucket.open(bus, Bucket.presence).then((b) => readAll(b)),
    KvBucket.open(bus, Bucket.wants).then((b) => readAll(b)),
    KvBucket.open(bus, Bucket.have).then((b) => readAll(b)),
    KvBucket.open(bus, Bucket.differences).then((b) => readAll(b)),
    KvBucket.open(bus, Bucket.asks).then((b) => readAll(b)),
    KvBucket.open(bus, Bucket.answers).then((b) => readAll(b)),
    readConditions(bus, options.signal === undefined ? {} : { signal: options.signal }),
  ]);
  const now = options.now.getTime();

  const nodeNames = new Set(presence.keys());
  const cells = new Map<string, { node: string; module: string }>();
  for (const key of [...wants.keys(), ...haves.keys()]) {
    const parsed = safeNodeModule(key);
    if (parsed === undefined) continue;
    nodeNames.add(parsed.node);
    cells.set(key, parsed);
  }
  const nodes = [...nodeNames].sort().map((node): StatusNode => {
    const p = presence.get(node);
    if (p === undefined) return { node, present: false, heartbeat: null, since: null, facts: null };
    const beat = Date.parse(p.heartbeat);
    const present = now - beat < PRESENCE_GONE_MS;
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
      };
    });

  return {
    at: options.now.toISOString(),
    nodes,
    modules,
    differences: [...differences.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([key, d]) => {
        const parsed = safeNodeModule(key);
        return parsed === undefined ? [] : [{ ...parsed, ...d }];
      }),
    asks: [...asks.values()].filter((a) => !answers.has(a.id)).sort((a, b) => cmp(a.at, b.at)),
    conditions: conditions.slice(0, RECENT_CONDITIONS),
  };
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

export async function statusVerb(options: VerbOptions): Promise<ExitCode> {
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
        ["node", "state", "last heartbeat", "host"],
        report.nodes.map((n) => [
          n.node,
          n.heartbeat === null ? "never seen" : n.present ? "present" : "gone",
          n.since === null ? "-" : `${n.since} (${ago(now, n.since)})`,
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
        ["module", "node", "want", "rule", "have", "health", "restarts", ""],
        report.modules.map((c) => [
          c.module,
          c.node,
          c.want?.build ?? "-",
          c.want?.rule ?? "-",
          c.have?.build ?? "-",
          c.health,
          c.have === null ? "-" : String(c.have.restarts),
          c.differs ? "differs" : "",
        ]),
      ),
    );

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
