/** One cell of the grid: a module on a node — its health, want against have, pin and last error. */
import type { Have, Put, Want } from "@mesh/protocol";
import { h } from "../dom.js";
import { age, badge, healthLabel, shortBuild } from "../format.js";
import { model, toggleSelected } from "../model.js";
import type { GridCell } from "../wire.js";

const HEALTH_KIND: Record<string, string> = {
  healthy: "ok",
  starting: "info",
  failing: "bad",
};

/** An assigned cell with nothing wanted or running yet: the read model's word for it. */
const VERDICT_BADGE = {
  starting: ["info", "starting"],
  "not-running": ["warn", "not running"],
} as const;

export function gridCell(node: string, module: string, cell: GridCell = {}): HTMLTableCellElement {
  const { want, have, difference, put, verdict } = cell;
  const selected = model.selected?.node === node && model.selected.module === module;
  const attrs = {
    class: `cell${selected ? " selected" : ""}`,
    "data-node": node,
    "data-module": module,
    "data-health": have?.health ?? (want === undefined ? "none" : "missing"),
    tabindex: 0,
    title: cellTitle(cell),
    onclick: () => toggleSelected(node, module),
    onkeydown: (event: Event) => {
      if ((event as KeyboardEvent).key === "Enter") toggleSelected(node, module);
    },
  };
  if (want === undefined && have === undefined) {
    return h(
      "td",
      { ...attrs, class: `${attrs.class} cell-empty` },
      ...(verdict === undefined || verdict.state === "healthy"
        ? [h("span", { class: "muted" }, "·")]
        : [
            badge(VERDICT_BADGE[verdict.state][0], VERDICT_BADGE[verdict.state][1]),
            h("div", { class: "cell-line muted cell-reason" }, verdict.reason),
          ]),
    );
  }
  return h(
    "td",
    attrs,
    h(
      "div",
      { class: "cell-top" },
      have === undefined
        ? badge("warn", "not running")
        : badge(HEALTH_KIND[have.health] ?? "none", healthLabel(have.health)),
      have === undefined ? null : h("span", { class: "since", title: have.since }, age(have.since)),
      difference !== undefined
        ? h("span", { class: "diff-mark", title: difference.reasons.join("\n") }, "⚠")
        : null,
    ),
    wantLine(want, have),
    have !== undefined && have.restarts > 0
      ? h(
          "div",
          { class: "cell-line muted" },
          `${have.restarts} restart${have.restarts === 1 ? "" : "s"}`,
        )
      : null,
    put === undefined ? null : pinLine(put),
    have?.lastError !== undefined
      ? h("div", { class: "cell-line cell-error" }, have.lastError)
      : null,
  );
}

/** The hover text: why the cell is as it is and what fixes it, or why its build is wanted. */
function cellTitle({ verdict, want }: GridCell): string | undefined {
  if (verdict === undefined) return want?.reason;
  return verdict.fix === undefined ? verdict.reason : `${verdict.reason}\nfix: ${verdict.fix}`;
}

/** The build wanted, with the one running first when it is another, and the rule that chose it. */
function wantLine(want: Want | undefined, have: Have | undefined): HTMLElement {
  if (want === undefined) return h("div", { class: "cell-line muted" }, "not wanted");
  const rule = h("span", { class: "rule" }, want.rule);
  if (have?.build === want.build) {
    return h("div", { class: "cell-line" }, h("code", {}, shortBuild(want.build)), " ", rule);
  }
  return h(
    "div",
    { class: "cell-line" },
    h("code", {}, shortBuild(have?.build)),
    " → ",
    h("code", {}, shortBuild(want.build)),
    " ",
    rule,
  );
}

function pinLine(put: Put): HTMLElement {
  return h(
    "div",
    { class: "cell-line", title: `${put.by}: ${put.why}` },
    h("span", { class: "pin" }, "pinned"),
    " to ",
    h("code", {}, shortBuild(put.build)),
  );
}
