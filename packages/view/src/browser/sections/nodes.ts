/** The nodes of the grid's page: presence, heartbeat, machine, mesh version and composition. */
import type { CompositionVerdict } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { age, badge, reasonList } from "../format.js";
import { model } from "../model.js";
import { table } from "../table.js";
import type { GridColumn, NodeState } from "../wire.js";

const STATE_BADGE: Record<NodeState, () => HTMLElement> = {
  present: () => badge("ok", "present"),
  gone: () => badge("bad", "gone"),
  never: () => badge("none", "never seen"),
};

export function renderNodes(): void {
  const grid = model.grid;
  if (grid === undefined) return;
  const rows = grid.columns;
  const paged = rows.length < grid.totals.nodes;
  fill(
    byId("nodes"),
    h(
      "h2",
      {},
      "Nodes ",
      h("span", { class: "count" }, grid.totals.nodes),
      paged ? h("span", { class: "muted" }, ` the grid's ${rows.length} shown`) : null,
    ),
    table<GridColumn>({
      rows,
      empty:
        grid.totals.nodes === 0
          ? "No node has reported yet. A host writes its presence when it starts."
          : "No node of the grid's page to show.",
      row: (r) => ({ "data-node": r.node }),
      columns: [
        { head: "node", rowHeader: true, cell: (r) => r.node },
        { head: "state", cell: (r) => STATE_BADGE[r.state]() },
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

function verdictCell(verdict: CompositionVerdict | undefined): HTMLElement {
  if (verdict === undefined) return h("span", { class: "muted" }, "not checked");
  if (verdict.verdict === "ok") return badge("ok", "composes");
  return h("div", {}, badge("bad", "refused"), reasonList(verdict.reasons));
}
