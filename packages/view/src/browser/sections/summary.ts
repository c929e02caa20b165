/**
 * The header's summary — the link, and the fleet's numbers from the server's read model (the
 * counts of what needs attention lead to the grid narrowed to it) — and the problems banner.
 */
import { byId, fill, h } from "../dom.js";
import { badge } from "../format.js";
import { model } from "../model.js";
import { openAsks } from "./asks.js";
import { showProblems } from "./grid.js";

const onProblems = (event: Event): void => {
  event.preventDefault();
  showProblems();
};

export function renderSummary(): void {
  const fleet = model.fleet;
  const asks = openAsks().length;
  const stat = (n: number, label: string): HTMLElement =>
    h("span", { class: "stat" }, h("b", {}, n), label);
  const link = (n: number, label: string, kind: string, href: string, problems: boolean) =>
    h(
      "a",
      {
        class: `stat${n > 0 ? ` stat-${kind}` : ""}`,
        href,
        onclick: problems ? onProblems : undefined,
      },
      h("b", {}, n),
      label,
    );
  fill(
    byId("summary"),
    linkBadge(),
    fleet === undefined
      ? null
      : h(
          "span",
          { class: "stat" },
          h("b", {}, `${fleet.nodes.present}/${fleet.nodes.total}`),
          " nodes present",
        ),
    fleet === undefined ? null : stat(fleet.modules, " modules"),
    fleet === undefined ? null : stat(fleet.cells.healthy, " healthy"),
    fleet === undefined || fleet.cells.starting === 0
      ? null
      : stat(fleet.cells.starting, " starting"),
    fleet === undefined ? null : link(fleet.cells.notRunning, " not running", "bad", "#grid", true),
    fleet === undefined
      ? null
      : link(fleet.differences.total, " differences", "warn", "#grid", true),
    link(asks, " open asks", "warn", "#asks", false),
  );
  renderProblems();
}

/** The page's link to its server and the server's to the bus. */
function linkBadge(): HTMLElement {
  if (model.link !== "live")
    return badge("bad", model.link === "lost" ? "view lost" : "reconnecting…");
  if (model.bus !== "connected") {
    return badge(
      "bad",
      "bus disconnected",
      "the view's connection to the bus is down; it reconnects by itself",
    );
  }
  const updated =
    model.lastChange === undefined
      ? undefined
      : `last change ${model.lastChange.toLocaleTimeString(undefined, { hour12: false })}`;
  return badge("ok", "live", updated);
}

/** Sources that cannot be read, so the page may be missing parts. */
function renderProblems(): void {
  const problems = byId("problems");
  problems.hidden = model.problems.size === 0;
  if (problems.hidden) return;
  fill(
    problems,
    h("strong", {}, "Some of the mesh cannot be read, so parts of this page may be missing:"),
    h(
      "ul",
      {},
      ...[...model.problems].map(([source, problem]) =>
        h("li", {}, h("code", {}, source), " — ", problem),
      ),
    ),
  );
}
