/** The asks: open ones first with yes/no, answered ones muted with their answer changeable. */
import type { Answer, Ask } from "@mesh/protocol";
import { post } from "../api.js";
import { byId, fill, h } from "../dom.js";
import { age } from "../format.js";
import { values } from "../model.js";
import { Source } from "../wire.js";

type Choice = "yes" | "no";

/** Asks without an answer, oldest first. */
export function openAsks(): Ask[] {
  const answers = values(Source.answers);
  return [...values<Ask>(Source.asks).values()]
    .filter((ask) => !answers.has(ask.id))
    .sort((a, b) => a.at.localeCompare(b.at));
}

export function renderAsks(): void {
  const answers = values<Answer>(Source.answers);
  const all = [...values<Ask>(Source.asks).values()].sort((a, b) => a.at.localeCompare(b.at));
  // Open asks first; an answered one stays (muted, its answer changeable) until the assigner acts
  // on it and withdraws it.
  const asks = [
    ...all.filter((ask) => !answers.has(ask.id)),
    ...all.filter((ask) => answers.has(ask.id)),
  ];
  const open = all.length - all.filter((ask) => answers.has(ask.id)).length;
  const section = byId("asks");
  section.hidden = asks.length === 0;
  fill(
    section,
    h(
      "h2",
      {},
      "Asks ",
      h("span", { class: "count", title: "open" }, open),
      open < asks.length ? h("span", { class: "muted" }, ` ${asks.length - open} answered`) : null,
    ),
    ...asks.map((ask) => askRow(ask, answers.get(ask.id))),
  );
}

function askRow(ask: Ask, given: Answer | undefined): HTMLElement {
  const status = h(
    "span",
    { class: "ask-status", role: "status" },
    given === undefined
      ? ""
      : `answered ${given.answer} by ${given.by} ${age(given.at)}; waiting for the assigner`,
  );
  const choices: Choice[] =
    given === undefined ? ["yes", "no"] : [given.answer === "yes" ? "no" : "yes"];
  return h(
    "div",
    {
      class: `ask${given === undefined ? "" : " ask-answered"}`,
      "data-ask-id": ask.id,
      "data-answered": given?.answer,
    },
    h(
      "div",
      { class: "ask-text" },
      h("div", { class: "ask-what" }, ask.what),
      h(
        "div",
        { class: "ask-meta" },
        h("span", {}, "module ", h("b", {}, ask.module)),
        h("span", {}, "build ", h("code", {}, ask.build)),
        h("span", {}, "nodes ", h("b", {}, ask.nodes.join(", ") || "—")),
        h("span", { class: "muted" }, `asked ${age(ask.at)} · ${ask.id}`),
      ),
    ),
    h(
      "div",
      { class: "ask-actions" },
      status,
      ...choices.map((choice) => answerButton(ask, given, choice, status)),
    ),
  );
}

function answerButton(
  ask: Ask,
  given: Answer | undefined,
  choice: Choice,
  status: HTMLElement,
): HTMLButtonElement {
  const button = h(
    "button",
    {
      class: `btn ${given === undefined ? `btn-${choice}` : "btn-small"}`,
      type: "button",
      "data-ask": ask.id,
      "data-answer": choice,
    },
    given === undefined ? (choice === "yes" ? "Yes" : "No") : `change to ${choice}`,
  );
  button.addEventListener("click", () => {
    button.disabled = true;
    status.textContent = "sending…";
    void post("/api/answer", { id: ask.id, answer: choice }).then((result) => {
      button.disabled = false;
      status.textContent = result.ok
        ? `answered ${choice}`
        : `${result.error.code}: ${result.error.message}`;
      status.className = `ask-status ${result.ok ? "ok" : "bad"}`;
    });
  });
  return button;
}
