/**
 * An action waiting for the operator's yes, said as the CLI command it is, and the last one's
 * result: shown in the actions panel's `#action-confirm` and `#action-result`.
 */
import { post } from "../api.js";
import { fill, h } from "../dom.js";
import { badge } from "../format.js";
import { invalidate } from "../model.js";
import { commandOf } from "../commands.js";
import type { ActionRequest, ActionResult } from "../wire.js";

interface Pending {
  readonly command: string;
  /** Done one after another (assign on some nodes is one per node); a refusal stops the rest. */
  readonly requests: readonly ActionRequest[];
}

let pending: Pending | undefined;
let last: { command: string; result: ActionResult } | undefined;

/** Asks for a confirmation of the request, which the command says in the CLI's words. */
export function propose(...requests: ActionRequest[]): void {
  if (requests.length === 0) return;
  pending = { command: requests.map(commandOf).join(" && "), requests };
  invalidate("actions");
}

async function confirm(): Promise<void> {
  const p = pending;
  if (p === undefined) return;
  pending = undefined;
  last = { command: p.command, result: { ok: true, message: "doing…" } };
  renderPendingAndResult();
  let result: ActionResult = { ok: false, error: { code: "USAGE", message: "nothing to do" } };
  for (const request of p.requests) {
    result = (await post("/api/act", request)) as ActionResult;
    if (!result.ok) break;
  }
  last = { command: p.command, result };
  renderPendingAndResult();
}

export function renderPendingAndResult(): void {
  const confirmBox = document.getElementById("action-confirm");
  const resultBox = document.getElementById("action-result");
  if (confirmBox === null || resultBox === null) return;
  fill(
    confirmBox,
    pending === undefined
      ? null
      : h(
          "div",
          { class: "confirm", "data-pending": pending.requests[0]?.action ?? "" },
          h("p", {}, "This will run ", h("code", {}, pending.command), ". Go ahead?"),
          h(
            "button",
            {
              class: "btn btn-yes",
              type: "button",
              "data-confirm": "yes",
              onclick: () => void confirm(),
            },
            "confirm",
          ),
          h(
            "button",
            {
              class: "btn",
              type: "button",
              "data-confirm": "no",
              onclick: () => {
                pending = undefined;
                renderPendingAndResult();
              },
            },
            "cancel",
          ),
        ),
  );
  fill(resultBox, last === undefined ? null : resultView(last.command, last.result));
}

function resultView(command: string, result: ActionResult): HTMLElement {
  return result.ok
    ? h(
        "div",
        { class: "result-ok", "data-result": "ok" },
        h("code", {}, command),
        " — ",
        result.message,
      )
    : h(
        "div",
        { class: "result-bad", "data-result": result.error.code },
        badge("bad", result.error.code),
        " ",
        h("code", {}, command),
        " — ",
        result.error.message,
      );
}
