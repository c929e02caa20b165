/** The newest builds, their status and time, and a log opened on demand. */
import { buildLog } from "../api.js";
import { byId, fill, h } from "../dom.js";
import { age, badge, shortBuild } from "../format.js";
import { invalidate, model, values } from "../model.js";
import { table } from "../table.js";
import { Source, type BuildSummary } from "../wire.js";

const SHOWN = 50;
const STATUS_KIND: Record<string, string> = { built: "ok", building: "info", failed: "bad" };

type Row = readonly [key: string, build: BuildSummary];

export function renderBuilds(): void {
  const all = values<BuildSummary>(Source.builds);
  const rows: Row[] = [...all]
    .sort(([, a], [, b]) => b.timings.started.localeCompare(a.timings.started))
    .slice(0, SHOWN);
  const log = model.openLog;
  fill(
    byId("builds"),
    h("h2", {}, "Builds ", h("span", { class: "count" }, all.size)),
    table<Row>({
      rows,
      empty: "No build yet.",
      row: ([key]) => ({ "data-build": key }),
      columns: [
        { head: "module", cell: ([, b]) => b.module },
        {
          head: "build",
          class: "nowrap",
          cell: ([, b]) => [
            h("code", { title: b.build }, shortBuild(b.build)),
            h("span", { class: "muted" }, ` #${b.candidate}`),
          ],
        },
        {
          head: "status",
          cell: ([, b]) => [
            badge(STATUS_KIND[b.status] ?? "none", b.status),
            b.error === undefined ? null : h("div", { class: "cell-error" }, b.error),
          ],
        },
        {
          head: "started",
          class: "num",
          title: ([, b]) => b.timings.started,
          cell: ([, b]) => age(b.timings.started),
        },
        {
          head: "took",
          class: "num",
          cell: ([, b]) =>
            b.timings.ms === undefined ? "—" : `${(b.timings.ms / 1000).toFixed(1)}s`,
        },
        { head: "log", cell: ([key, b]) => logButton(key, b.logLines) },
      ],
    }),
    log === undefined
      ? null
      : h(
          "div",
          { class: "log" },
          h("div", { class: "log-title" }, `log of ${log.key}`),
          h("pre", { id: "build-log" }, log.text),
        ),
  );
}

function logButton(key: string, lines: number): HTMLElement {
  if (lines === 0) return h("span", { class: "muted" }, "empty");
  return h(
    "button",
    { class: "btn btn-small", type: "button", onclick: () => void toggleLog(key) },
    model.openLog?.key === key ? "hide" : `${lines} lines`,
  );
}

async function toggleLog(key: string): Promise<void> {
  model.openLog = model.openLog?.key === key ? undefined : { key, text: await buildLog(key) };
  invalidate("builds");
}
