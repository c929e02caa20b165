/** Where a node's want and have differ, and why. */
import type { Difference } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { reasonList, shortBuild, splitKey } from "../format.js";
import { values } from "../model.js";
import { table } from "../table.js";
import { Source } from "../wire.js";

type Row = readonly [key: string, difference: Difference];

const build = (id: string | undefined): HTMLElement => h("code", {}, shortBuild(id));

export function renderDifferences(): void {
  const rows: Row[] = [...values<Difference>(Source.differences)].sort(([a], [b]) =>
    a.localeCompare(b),
  );
  fill(
    byId("differences"),
    h("h2", {}, "Differences ", h("span", { class: "count" }, rows.length)),
    table<Row>({
      rows,
      empty: "None: every node runs what it should.",
      columns: [
        { head: "node", cell: ([key]) => splitKey(key)[0] },
        { head: "module", cell: ([key]) => splitKey(key)[1] },
        { head: "want", cell: ([, d]) => build(d.want) },
        { head: "composed", cell: ([, d]) => build(d.composed) },
        { head: "have", cell: ([, d]) => build(d.have) },
        { head: "why", cell: ([, d]) => reasonList(d.reasons) },
      ],
    }),
  );
}
