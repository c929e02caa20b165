/**
 * Every table on the page is built here: columns (a head, how to draw a row's cell), rows, and a
 * note instead of the table when there are no rows.
 */
import { h, type Attributes, type Child } from "./dom.js";
import { emptyNote } from "./format.js";

/** A cell's content; a `td`/`th` built by the caller is used as it is, attributes and all. */
export type Cell = Child | HTMLTableCellElement | readonly Child[];

export interface Column<T> {
  readonly head: Cell;
  readonly cell: (row: T) => Cell;
  /** The class of this column's cells (`num`, `nowrap`, `message`). */
  readonly class?: string;
  /** A title (hover text) for a row's cell. */
  readonly title?: (row: T) => string | undefined;
  /** This column's cells name their row (`th scope=row`). */
  readonly rowHeader?: boolean;
}

export interface TableOptions<T> {
  readonly columns: readonly Column<T>[];
  readonly rows: readonly T[];
  /** Shown instead of the table when there are no rows; without it an empty table is shown. */
  readonly empty?: string;
  /** The table's class: `table` unless told. */
  readonly class?: string;
  readonly caption?: string;
  /** Whether the column heads are shown (default true). */
  readonly head?: boolean;
  /** Attributes of a row's `tr` (`data-*` names the tests and scripts find rows by). */
  readonly row?: (row: T) => Attributes;
}

export function table<T>(options: TableOptions<T>): HTMLElement {
  if (options.rows.length === 0 && options.empty !== undefined) return emptyNote(options.empty);
  const { columns } = options;
  const head =
    options.head === false
      ? null
      : h("thead", {}, h("tr", {}, ...columns.map((c) => asCell("th", {}, c.head))));
  const body = h(
    "tbody",
    {},
    ...options.rows.map((row) =>
      h(
        "tr",
        options.row?.(row) ?? {},
        ...columns.map((c) =>
          asCell(
            c.rowHeader === true ? "th" : "td",
            {
              class: c.class,
              title: c.title?.(row),
              scope: c.rowHeader === true ? "row" : undefined,
            },
            c.cell(row),
          ),
        ),
      ),
    ),
  );
  return h(
    "table",
    { class: options.class ?? "table" },
    options.caption === undefined ? null : h("caption", {}, options.caption),
    head,
    body,
  );
}

function asCell(tag: "td" | "th", attributes: Attributes, content: Cell): HTMLTableCellElement {
  if (content instanceof HTMLTableCellElement) return content;
  const children: readonly Child[] = Array.isArray(content) ? content : [content as Child];
  return h(tag, attributes, ...children);
}
