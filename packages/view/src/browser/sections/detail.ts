/** The selected cell in full: its want, its have, and their difference. */
import type { Difference, Have, Want } from "@mesh/protocol";
import { byId, fill, h, type Child } from "../dom.js";
import { age, reasonList } from "../format.js";
import { model, toggleSelected } from "../model.js";
import { table } from "../table.js";
import { openHistory } from "./history.js";
import { openLogs } from "./logs.js";
import { openToolCalls } from "./tool-calls.js";
import type { CellVerdict } from "../wire.js";

type Pair = readonly [label: string, value: Child];

export function renderDetail(): void {
  const container = byId("detail");
  const selected = model.selected;
  container.hidden = selected === undefined;
  if (selected === undefined) return;
  const { want, have, difference, verdict } =
    model.grid?.cells[`${selected.node}.${selected.module}`] ?? {};
  fill(
    container,
    h(
      "h2",
      {},
      `${selected.module} on ${selected.node}`,
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          onclick: () => toggleSelected(selected.node, selected.module),
        },
        "close",
      ),
    ),
    verdict === undefined ? null : verdictLine(verdict),
    h(
      "div",
      { class: "detail-actions" },
      button("logs here", "logs-node", () => void openLogs(selected.module, selected.node)),
      button("logs on every node", "logs-all", () => void openLogs(selected.module, undefined)),
      button("history", "history", () => void openHistory(selected.module, selected.node)),
      button("tool calls here", "tool-calls-node", () =>
        openToolCalls(selected.module, selected.node),
      ),
      button("tool calls on every node", "tool-calls-all", () =>
        openToolCalls(selected.module, undefined),
      ),
    ),
    h(
      "div",
      { class: "detail-cols" },
      pairs("want", want === undefined ? [["—", "not wanted here"]] : wantPairs(want)),
      pairs("have", have === undefined ? [["—", "not running here"]] : havePairs(have)),
      pairs(
        "difference",
        difference === undefined
          ? [["—", "none: want and have agree"]]
          : differencePairs(difference),
      ),
    ),
  );
}

const button = (label: string, name: string, onclick: () => void): HTMLElement =>
  h("button", { class: "btn btn-small", type: "button", "data-open": name, onclick }, label);

const pairs = (caption: string, rows: readonly Pair[]): HTMLElement =>
  table<Pair>({
    class: "table kv",
    caption,
    head: false,
    rows,
    columns: [
      { head: "", rowHeader: true, cell: ([label]) => label },
      { head: "", cell: ([, value]) => value },
    ],
  });

const code = (text: string): HTMLElement => h("code", {}, text);

const wantPairs = (want: Want): Pair[] => [
  ["build", code(want.build)],
  ["rule", want.rule],
  ["reason", want.reason],
  ["manifest", code(want.manifestDigest.slice(0, 12))],
  ["fingerprint", code(want.fingerprint.slice(0, 12))],
];

const havePairs = (have: Have): Pair[] => [
  ["build", code(have.build ?? "—")],
  ["health", `${have.health} since ${age(have.since)}`],
  ["restarts", String(have.restarts)],
  ["last error", have.lastError ?? "—"],
  ["fingerprint", code(have.fingerprint.slice(0, 12))],
];

const differencePairs = (difference: Difference): Pair[] => [
  ["want", difference.want ?? "—"],
  ["composed", difference.composed ?? "—"],
  ["have", difference.have ?? "—"],
  ["why", reasonList(difference.reasons)],
];

/** Why the cell is as it is, and what fixes it. */
const verdictLine = (verdict: CellVerdict): HTMLElement =>
  h(
    "p",
    { class: `verdict verdict-${verdict.state}`, "data-verdict": verdict.state },
    verdict.reason,
    verdict.fix === undefined ? null : h("span", { class: "fix" }, " — fix: ", verdict.fix),
  );
