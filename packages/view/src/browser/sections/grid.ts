/**
 * The grid: a row per module, a column per node, a cell per pair. It can be narrowed by a name
 * (a module's row on every node, or a node's column) and to what needs attention.
 */
import type { CompositionVerdict, Presence } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { cellTroubled, modules, nodeTroubled, nodes, placement, present } from "../fleet.js";
import { badge, emptyNote } from "../format.js";
import { invalidate, model, values } from "../model.js";
import { table, type Column } from "../table.js";
import { Source } from "../wire.js";
import { gridCell } from "./grid-cell.js";

/** What the grid shows after the filter and the problems-only switch. */
interface Shown {
  readonly rows: readonly string[];
  readonly columns: readonly string[];
  readonly allRows: number;
  readonly allColumns: number;
}

export function renderGrid(): void {
  const allColumns = nodes();
  const allRows = modules();
  const container = byId("grid-body");
  byId("grid-count").textContent = `${allRows.length} × ${allColumns.length}`;
  if (allRows.length === 0 || allColumns.length === 0) {
    fill(
      container,
      emptyNote(
        allRows.length === 0
          ? "No module is registered yet: mesh module add <dir>."
          : "No node yet.",
      ),
    );
    return;
  }
  const shown = narrow(allRows, allColumns);
  if (shown.rows.length === 0 || shown.columns.length === 0) {
    fill(
      container,
      emptyNote(
        model.problemsOnly && model.gridFilter.trim() === ""
          ? "Nothing needs attention: every module runs healthy where it is wanted."
          : `Nothing matches ${JSON.stringify(model.gridFilter)}${model.problemsOnly ? " that needs attention" : ""}.`,
      ),
    );
    return;
  }
  const columns: Array<Column<string>> = [
    {
      head: h("th", { class: "corner" }, "module \\ node"),
      rowHeader: true,
      cell: (module) => [module, h("div", { class: "row-note" }, placement(module))],
    },
    ...shown.columns.map((node): Column<string> => ({
      head: nodeHead(node),
      cell: (module) => gridCell(node, module),
    })),
  ];
  fill(
    container,
    h("div", { class: "grid-scroll" }, table({ class: "grid", columns, rows: shown.rows })),
    legend(shown),
  );
}

/** Applies the filter, then the problems-only switch. */
function narrow(allRows: readonly string[], allColumns: readonly string[]): Shown {
  const filter = model.gridFilter.trim().toLowerCase();
  const matches = (name: string): boolean => filter === "" || name.includes(filter);
  // A filter naming a module shows its row on every node; one naming a node, its column.
  const rowsByName = allRows.filter(matches);
  const columnsByName = allColumns.filter(matches);
  let rows = rowsByName.length > 0 ? rowsByName : allRows;
  let columns = columnsByName.length > 0 ? columnsByName : allColumns;
  if (filter !== "" && rowsByName.length === 0 && columnsByName.length === 0) {
    rows = [];
    columns = [];
  }
  if (model.problemsOnly) {
    rows = rows.filter((m) => columns.some((n) => cellTroubled(n, m)));
    columns = columns.filter((n) => nodeTroubled(n) || rows.some((m) => cellTroubled(n, m)));
  }
  return { rows, columns, allRows: allRows.length, allColumns: allColumns.length };
}

/** A node's column head: its name, gone when it is, and a refused composition. */
function nodeHead(node: string): HTMLTableCellElement {
  const here = present(values<Presence>(Source.presence).get(node));
  const verdict = values<CompositionVerdict>(Source.compositions).get(node);
  return h(
    "th",
    { scope: "col", class: here ? "" : "node-gone", title: here ? undefined : "no heartbeat" },
    node,
    here ? null : h("span", { class: "col-note" }, " gone"),
    verdict?.verdict === "refused"
      ? h("div", {}, badge("bad", "composition refused", verdict.reasons.join("\n")))
      : null,
  );
}

function legend(shown: Shown): HTMLElement {
  const hiddenRows = shown.allRows - shown.rows.length;
  const hiddenColumns = shown.allColumns - shown.columns.length;
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
    invalidate("grid");
  });
  problemsOnly.addEventListener("change", () => {
    model.problemsOnly = problemsOnly.checked;
    invalidate("grid");
  });
}

/** The summary's "failing" and "differences" lead to the grid narrowed to what needs attention. */
export function showProblems(): void {
  (byId("grid-problems") as HTMLInputElement).checked = true;
  model.problemsOnly = true;
  invalidate("grid");
  byId("grid").scrollIntoView();
}
