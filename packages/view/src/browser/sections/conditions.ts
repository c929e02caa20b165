/**
 * The newest conditions modules have said, the latest per module and name; a resolved one (its
 * cause ended: `mesh conditions resolve`, or the process that said it) is left out, as status
 * leaves it out.
 */
import type { Condition } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { badge, clock } from "../format.js";
import { values } from "../model.js";
import { table } from "../table.js";
import { Source } from "../wire.js";

const SHOWN = 100;
const LEVEL_KIND: Record<string, string> = { info: "info", warning: "warn", error: "bad" };

export function renderConditions(): void {
  const open = [...values<Condition>(Source.conditions).values()].filter(
    (c) => c.resolved !== true,
  );
  const rows = open.sort((a, b) => b.at.localeCompare(a.at)).slice(0, SHOWN);
  fill(
    byId("conditions"),
    h("h2", {}, "Recent conditions ", h("span", { class: "count" }, open.length)),
    table<Condition>({
      rows,
      empty: "No open condition.",
      row: (c) => ({ "data-condition": `${c.module}.${c.name}` }),
      columns: [
        { head: "when", class: "num", title: (c) => c.at, cell: (c) => clock(c.at) },
        { head: "level", cell: (c) => badge(LEVEL_KIND[c.level] ?? "none", c.level) },
        {
          head: "module",
          cell: (c) => [c.module, h("span", { class: "muted" }, ` / ${c.name}`)],
        },
        { head: "node", class: "nowrap", cell: (c) => c.node ?? "—" },
        { head: "message", class: "message", cell: (c) => c.message },
      ],
    }),
  );
}
