/**
 * The grid: a row per module, a column per node, a cell per pair — one page of nodes at a time,
 * as the server hands it. It can be narrowed by a name (a module's row on every node, or a
 * node's column) and to what needs attention; both are applied by the server.
 */
import { loadGrid } from "../api.js";
import { byId, fill, h } from "../dom.js";
import { badge, emptyNote } from "../format.js";
import { invalidate, model } from "../model.js";
import { table, type Column } from "../table.js";
import type { GridColumn, GridPage, GridRow } from "../wire.js";
import { gridCell } from "./grid-cell.js";

export function renderGrid(): void {
  const grid = model.grid;
  const container = byId("grid-body");
  if (grid === undefined) return;
  byId("grid-count").textContent = `${grid.totals.modules} × ${grid.totals.nodes}`;
  if (grid.totals.modules === 0 || grid.totals.nodes === 0) {
    fill(
      container,
      emptyNote(
        grid.totals.modules === 0
          ? "No module is registered yet: mesh module add <dir>."
          : "No node yet.",
      ),
    );
    return;
  }
  if (grid.columns.length === 0 || grid.rows.length === 0) {
    fill(
      container,
      grid.matched.nodes > 0 && grid.matched.modules > 0 ? pager(grid) : null,
      emptyNote(
        model.problemsOnly && model.gridFilter.trim() === ""
          ? "Nothing needs attention: every module runs healthy where it is wanted."
          : `Nothing matches ${JSON.stringify(model.gridFilter)}${model.problemsOnly ? " that needs attention" : ""}.`,
      ),
    );
    return;
  }
  const columns: Array<Column<GridRow>> = [
    {
      head: h("th", { class: "corner" }, "module \\ node"),
      rowHeader: true,
      cell: (row) => [row.module, h("div", { class: "row-note" }, row.placement)],
    },
    ...grid.columns.map((column): Column<GridRow> => ({
      head: nodeHead(column),
      cell: (row) => gridCell(column.node, row.module, grid.cells[`${column.node}.${row.module}`]),
    })),
  ];
  fill(
    container,
    pager(grid),
    h("div", { class: "grid-scroll" }, table({ class: "grid", columns, rows: grid.rows })),
    legend(grid),
  );
}

/** A node's column head: its name, gone when it is, and a refused composition. */
function nodeHead({ node, state, verdict }: GridColumn): HTMLTableCellElement {
  const here = state === "present";
  return h(
    "th",
    { scope: "col", class: here ? "" : "node-gone", title: here ? undefined : "no heartbeat" },
    node,
    here ? null : h("span", { class: "col-note" }, state === "never" ? " never seen" : " gone"),
    verdict?.verdict === "refused"
      ? h("div", {}, badge("bad", "composition refused", verdict.reasons.join("\n")))
      : null,
  );
}

/** Which nodes are shown, and the way to the others; nothing when they all fit. */
function pager(grid: GridPage): HTMLElement | null {
  const total = grid.matched.nodes;
  if (total <= grid.query.count && grid.query.from === 0) return null;
  const from = Math.min(grid.query.from, Math.max(0, total - 1));
  const to = Math.min(total, from + grid.columns.length);
  const go = (start: number) => (): void => {
    model.gridFrom = Math.max(0, start);
    void loadGrid();
  };
  return h(
    "div",
    { class: "pager", id: "grid-pager" },
    h(
      "button",
      {
        class: "btn btn-small",
        type: "button",
        disabled: from === 0,
        onclick: go(from - grid.query.count),
      },
      "‹ previous",
    ),
    h("span", { class: "muted" }, ` nodes ${from + 1}–${to} of ${total} `),
    h(
      "button",
      {
        class: "btn btn-small",
        type: "button",
        disabled: to >= total,
        onclick: go(from + grid.query.count),
      },
      "next ›",
    ),
  );
}

function legend(grid: GridPage): HTMLElement {
  const hiddenRows = grid.totals.modules - grid.matched.modules;
  const hiddenColumns = grid.totals.nodes - grid.matched.nodes;
  return h(
    "p",
    { class: "legend" },
    badge("ok", "healthy"),
    badge("info", "starting"),
    badge("bad", "failing"),
    badge("none", "stopped"),
    badge("warn", "wanted, not running"),
    " · ⚠ want and have differ · click a cell for its details",
    hiddenRows + hiddenColumns > 0
      ? h(
          "span",
          { class: "hidden-note" },
          ` · ${hiddenRows} modules and ${hiddenColumns} nodes hidden by the filter`,
        )
      : null,
  );
}

/** The grid's own controls: the name filter and the problems-only switch. */
export function initGridControls(): void {
  const filter = byId("grid-filter") as HTMLInputElement;
  const problemsOnly = byId("grid-problems") as HTMLInputElement;
  filter.addEventListener("input", () => {
    model.gridFilter = filter.value;
    model.gridFrom = 0;
    void loadGrid();
  });
  problemsOnly.addEventListener("change", () => {
    model.problemsOnly = problemsOnly.checked;
    model.gridFrom = 0;
    void loadGrid();
  });
}

/** The summary's "failing" and "differences" lead to the grid narrowed to what needs attention. */
export function showProblems(): void {
  (byId("grid-problems") as HTMLInputElement).checked = true;
  model.problemsOnly = true;
  model.gridFrom = 0;
  void loadGrid();
  invalidate("grid");
  byId("grid").scrollIntoView();
}
