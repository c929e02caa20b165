/** The nodes: presence, heartbeat, machine, mesh version and composition verdict. */
import type { CompositionVerdict, Presence } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { nodes, present } from "../fleet.js";
import { age, badge, reasonList } from "../format.js";
import { values } from "../model.js";
import { table } from "../table.js";
import { Source } from "../wire.js";

interface NodeRow {
  readonly node: string;
  readonly presence: Presence | undefined;
  readonly verdict: CompositionVerdict | undefined;
}

export function renderNodes(): void {
  const presence = values<Presence>(Source.presence);
  const verdicts = values<CompositionVerdict>(Source.compositions);
  const rows = nodes().map((node): NodeRow => ({
    node,
    presence: presence.get(node),
    verdict: verdicts.get(node),
  }));
  fill(
    byId("nodes"),
    h("h2", {}, "Nodes ", h("span", { class: "count" }, rows.length)),
    table<NodeRow>({
      rows,
      empty: "No node has reported yet. A host writes its presence when it starts.",
      row: (r) => ({ "data-node": r.node }),
      columns: [
        { head: "node", rowHeader: true, cell: (r) => r.node },
        { head: "state", cell: (r) => presenceBadge(r.presence) },
        {
          head: "heartbeat",
          class: "num",
          title: (r) => r.presence?.heartbeat,
          cell: (r) => (r.presence === undefined ? "—" : age(r.presence.heartbeat)),
        },
        {
          head: "machine",
          cell: ({ presence: p }) =>
            p === undefined ? "—" : `${p.facts.hostname} · ${p.facts.os}/${p.facts.arch}`,
        },
        { head: "mesh", cell: (r) => r.presence?.facts.version ?? "—" },
        { head: "composition", cell: (r) => verdictCell(r.verdict) },
      ],
    }),
  );
}

function presenceBadge(presence: Presence | undefined): HTMLElement {
  if (presence === undefined) return badge("none", "never seen");
  return present(presence) ? badge("ok", "present") : badge("bad", "gone");
}

function verdictCell(verdict: CompositionVerdict | undefined): HTMLElement {
  if (verdict === undefined) return h("span", { class: "muted" }, "not checked");
  if (verdict.verdict === "ok") return badge("ok", "composes");
  return h("div", {}, badge("bad", "refused"), reasonList(verdict.reasons));
}
