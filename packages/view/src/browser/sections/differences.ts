/** Where a node's want and have differ, and why: the first of them, and how many there are. */
import type { Difference } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { reasonList, shortBuild, splitKey } from "../format.js";
import { model } from "../model.js";
import { table } from "../table.js";

interface Row {
  readonly key: string;
  readonly difference: Difference;
}

const build = (id: string | undefined): HTMLElement => h("code", {}, shortBuild(id));

export function renderDifferences(): void {
  const differences = model.fleet?.differences;
  if (differences === undefined) return;
  const rows = differences.first;
  fill(
    byId("differences"),
    h(
      "h2",
      {},
      "Differences ",
      h("span", { class: "count" }, differences.total),
      rows.length < differences.total
        ? h("span", { class: "muted" }, ` the first ${rows.length} shown`)
        : null,
    ),
    table<Row>({
      rows,
      empty: "None: every node runs what it should.",
      columns: [
        { head: "node", cell: (r) => splitKey(r.key)[0] },
        { head: "module", cell: (r) => splitKey(r.key)[1] },
        { head: "want", cell: (r) => build(r.difference.want) },
        { head: "composed", cell: (r) => build(r.difference.composed) },
        { head: "have", cell: (r) => build(r.difference.have) },
        { head: "why", cell: (r) => reasonList(r.difference.reasons) },
      ],
    }),
  );
}
