/**
 * Each module's rollout (issue 22) as the assigner records it: its build, its status, the waves
 * given of all (drawn as a bar), its canary's health (as the node's host reports the build), the
 * nodes of the last wave (the canary while it is wave 1), what
 * it waits for, why it halted; its progress over time as a plot (read on demand from the module's
 * timeline); and the steering an operator does, each confirmed as the command. Config values
 * rolling out in waves (decision 0131) are a table of their own below.
 */
import type { ConfigRollout, Rollout } from "@mesh/protocol";
import { byId, fill, h } from "../dom.js";
import { age, badge, shortBuild } from "../format.js";
import { invalidate, model, values } from "../model.js";
import { table, type Column } from "../table.js";
import { Source, type ModuleTimeline, type RolloutSteerAction } from "../wire.js";
import { propose } from "./confirm.js";
import { rolloutPlot } from "./plots.js";

/** The rollout whose progress is drawn, and its module's timeline once read. */
let drawn: { module: string; timeline: ModuleTimeline | undefined } | undefined;

async function showProgress(module: string): Promise<void> {
  const state = { module, timeline: undefined as ModuleTimeline | undefined };
  drawn = state;
  invalidate("rollouts");
  try {
    const response = await fetch(`/api/timeline?${new URLSearchParams({ module }).toString()}`);
    if (response.ok) state.timeline = (await response.json()) as ModuleTimeline;
  } catch {
    // Shown as not read below.
  }
  if (drawn === state) invalidate("rollouts");
}

const STATUS_KIND: Record<string, string> = {
  rolling: "info",
  paused: "warn",
  done: "ok",
  failed: "bad",
  aborted: "bad",
};

/** The steering that makes sense in each status. */
const STEERS: Record<string, readonly RolloutSteerAction[]> = {
  rolling: ["pause", "promote", "abort"],
  paused: ["resume", "promote", "abort"],
  failed: ["retry"],
  aborted: ["retry"],
  done: [],
};

export function renderRollouts(): void {
  const rollouts = [...values<Rollout>(Source.rollouts).values()].sort((a, b) =>
    a.module < b.module ? -1 : 1,
  );
  const container = byId("rollouts");
  container.hidden = rollouts.length === 0 && values(Source.configWaves).size === 0;
  fill(
    container,
    h("h2", {}, "Rollouts ", h("span", { class: "count" }, rollouts.length)),
    table<Rollout>({
      rows: rollouts,
      empty: "No rollout.",
      row: (r) => ({ "data-rollout": r.module, "data-status": r.status }),
      columns: [
        { head: "module", rowHeader: true, cell: (r) => r.module },
        { head: "build", cell: (r) => h("code", { title: r.build }, shortBuild(r.build)) },
        { head: "status", cell: (r) => badge(STATUS_KIND[r.status] ?? "none", r.status) },
        { head: "waves", cell: (r) => progress(r) },
        { head: "canary", cell: (r) => canary(r) },
        {
          head: "last wave",
          class: "message",
          cell: (r) => [
            r.wave === 1 ? h("span", { class: "muted" }, "canary: ") : null,
            r.waveNodes.join(", "),
            h(
              "div",
              { class: "muted" },
              `given ${age(r.waveAt)}; ${r.admitted.length} nodes admitted`,
            ),
          ],
        },
        waitingFor<Rollout>({ reason: true }),
        { head: "steer", cell: (r) => steers(r) },
      ],
    }),
    progressView(rollouts),
    configRollouts(),
  );
}

/**
 * What a rollout waits for and, halted, on which nodes; `reason` adds the halt's reason (a
 * config value's is those nodes again).
 */
function waitingFor<R extends Rollout | ConfigRollout>(options: { reason: boolean }): Column<R> {
  return {
    head: "waiting for",
    class: "message",
    cell: (r) => [
      r.waiting,
      r.failed === undefined
        ? null
        : h(
            "div",
            { class: "cell-error", "data-halted": "true" },
            options.reason ? r.failed.reason : null,
            ...r.failed.nodes.map((n) => h("div", {}, `${n.node}: ${n.error}`)),
          ),
    ],
  };
}

/** Each config value's rollout (decision 0131): the value, its status, waves and steering. */
function configRollouts(): HTMLElement | null {
  const rows = [...values<ConfigRollout>(Source.configWaves).values()].sort((a, b) =>
    `${a.module}.${a.key}` < `${b.module}.${b.key}` ? -1 : 1,
  );
  if (rows.length === 0) return null;
  return h(
    "div",
    { class: "config-rollouts" },
    h("h3", {}, "Config values in waves"),
    table<ConfigRollout>({
      rows,
      empty: "No config rollout.",
      row: (r) => ({ "data-config-rollout": `${r.module}.${r.key}`, "data-status": r.status }),
      columns: [
        { head: "module", rowHeader: true, cell: (r) => r.module },
        { head: "value", cell: (r) => h("code", {}, `${r.key}=${JSON.stringify(r.value)}`) },
        { head: "status", cell: (r) => badge(STATUS_KIND[r.status] ?? "none", r.status) },
        { head: "waves", cell: (r) => progress(r) },
        waitingFor<ConfigRollout>({ reason: false }),
        {
          head: "steer",
          cell: (r) =>
            h(
              "div",
              { class: "action-row" },
              // A retry is a new `mesh config set … --rollout`: the request is the value.
              ...(STEERS[r.status] ?? [])
                .filter((steer) => steer !== "retry")
                .map((steer) =>
                  h(
                    "button",
                    {
                      class: "btn btn-small",
                      type: "button",
                      "data-steer": steer,
                      onclick: () =>
                        propose({
                          action: "rolloutSteer",
                          input: { module: r.module, steer, config: r.key },
                        }),
                    },
                    steer,
                  ),
                ),
            ),
        },
      ],
    }),
  );
}

function progressView(rollouts: readonly Rollout[]): HTMLElement | null {
  const shown = drawn;
  const rollout = rollouts.find((r) => r.module === shown?.module);
  if (shown === undefined || rollout === undefined) return null;
  return h(
    "div",
    { class: "rollout-progress" },
    h("h3", {}, `${rollout.module}: nodes on ${shortBuild(rollout.build)} over time`),
    shown.timeline === undefined
      ? h("p", { class: "empty" }, "Reading…")
      : rolloutPlot(rollout, shown.timeline),
  );
}

const CANARY_KIND: Record<string, string> = {
  healthy: "ok",
  starting: "info",
  failing: "bad",
  stopped: "warn",
};

/** Each canary node and how it runs the build rolled out, as its host reports it. */
function canary(r: Rollout): HTMLElement {
  const nodes = model.canaries[r.module] ?? [];
  if (r.policy.canary === 0) return h("span", { class: "muted" }, "none");
  return h(
    "div",
    {},
    ...nodes.map((c) =>
      h(
        "div",
        { "data-canary": c.node, "data-canary-health": c.health },
        `${c.node} `,
        badge(CANARY_KIND[c.health] ?? "none", c.health),
      ),
    ),
  );
}

/** The waves given of all, as a bar: one segment per wave, filled as it is given. */
function progress(r: Pick<Rollout, "wave" | "waves" | "status">): HTMLElement {
  const total = Math.max(1, r.waves);
  return h(
    "div",
    { class: "waves", title: `wave ${r.wave} of ${r.waves}`, "data-wave": `${r.wave}/${r.waves}` },
    ...Array.from({ length: total }, (_, i) =>
      h("span", { class: `wave ${i < r.wave ? `wave-given wave-${r.status}` : ""}` }),
    ),
    h("span", { class: "muted" }, ` ${r.wave}/${r.waves}`),
  );
}

function steers(r: Rollout): HTMLElement {
  return h(
    "div",
    { class: "action-row" },
    h(
      "button",
      {
        class: "btn btn-small",
        type: "button",
        "data-rollout-progress": r.module,
        onclick: () => void showProgress(r.module),
      },
      "progress",
    ),
    ...(STEERS[r.status] ?? []).map((steer) =>
      h(
        "button",
        {
          class: "btn btn-small",
          type: "button",
          "data-steer": steer,
          onclick: () => propose({ action: "rolloutSteer", input: { module: r.module, steer } }),
        },
        steer,
      ),
    ),
  );
}
