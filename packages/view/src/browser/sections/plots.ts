/**
 * Plots drawn by hand as SVG (a few shapes do not need a charting library): a module's timeline,
 * one row per node, each build a band from when the node took it to when it took the next; its
 * nodes' health over time; a tool's calls and errors per second (decision 0172); and a rollout's
 * progress, its nodes on the build it rolls out over time.
 */
import { clock, shortBuild } from "../format.js";
import { now } from "../model.js";
import type { HealthPoint, ModuleTimeline, ToolSeries, ToolStatsSeries } from "../wire.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 18;
const LABEL = 110;
const WIDTH = 760;
/** Colours told apart at a glance; a module rarely has more builds in view than these. */
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"];

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  ...children: Array<SVGElement | string>
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  for (const child of children)
    element.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  return element;
}

/**
 * A plot of values over time, PLOT_HEIGHT high with its legend under it: the svg (`attributes`
 * name it: its class, id or data), its title, and its top value and 0 named on the left.
 */
function plotOf(
  attributes: Record<string, string | number>,
  title: string,
  top: string,
  ...children: SVGElement[]
): SVGSVGElement {
  return svg(
    "svg",
    {
      ...attributes,
      viewBox: `0 0 ${WIDTH} ${PLOT_HEIGHT + 20}`,
      width: WIDTH,
      height: PLOT_HEIGHT + 20,
      role: "img",
    },
    svg("title", {}, title),
    svg("text", { x: 0, y: 12, class: "plot-label" }, top),
    svg("text", { x: 0, y: PLOT_HEIGHT - 2, class: "plot-label" }, "0"),
    ...children,
  );
}

/** The y of a value from 0 (at the bottom) to `top`. */
const yOf =
  (top: number) =>
  (n: number): number =>
    4 + (1 - n / top) * (PLOT_HEIGHT - 8);

/** The x of an instant from `start` (after the labels) to `end`. */
const xOf =
  (start: number, end: number) =>
  (t: number): number =>
    LABEL + ((t - start) / (end - start)) * (WIDTH - LABEL - 4);

/** An entry of the legend under a plot, `x` from its left. */
const legendOf = (x: number, colour: string, text: string): SVGTextElement =>
  svg("text", { x, y: PLOT_HEIGHT + 16, fill: colour, class: "plot-legend" }, text);

export function timelinePlot(timeline: ModuleTimeline): SVGSVGElement {
  const times = timeline.nodes.flatMap((n) => n.builds.map((b) => Date.parse(b.at)));
  const start = Math.min(...times);
  const end = Math.max(now(), start + 1_000);
  const x = (t: number): number => LABEL + ((t - start) / (end - start)) * (WIDTH - LABEL - 4);
  const builds = [...new Set(timeline.nodes.flatMap((n) => n.builds.map((b) => b.build)))];
  const colour = (build: string): string =>
    PALETTE[builds.indexOf(build) % PALETTE.length] ?? "#888";
  const height = timeline.nodes.length * ROW + 22;
  const rows = timeline.nodes.flatMap((node, i) => {
    const y = i * ROW;
    return [
      svg("text", { x: 0, y: y + 13, class: "plot-label" }, node.node),
      ...node.builds.map((b, j) => {
        const from = x(Date.parse(b.at));
        const next = node.builds[j + 1];
        const to = next === undefined ? x(end) : x(Date.parse(next.at));
        return svg(
          "rect",
          {
            x: from,
            y: y + 2,
            width: Math.max(2, to - from),
            height: ROW - 4,
            fill: colour(b.build),
            "data-node": node.node,
            "data-build": b.build,
          },
          svg("title", {}, `${node.node} took ${b.build} at ${clock(b.at)}`),
        );
      }),
    ];
  });
  const legendY = timeline.nodes.length * ROW + 16;
  const legend = builds.map((b, i) =>
    svg(
      "text",
      { x: LABEL + i * 110, y: legendY, fill: colour(b), class: "plot-legend" },
      `■ ${shortBuild(b)}`,
    ),
  );
  return svg(
    "svg",
    { class: "plot", viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, role: "img" },
    svg("title", {}, `when each node took each build of ${timeline.module}`),
    ...rows,
    ...legend,
  );
}

const HEALTH_COLOUR: Record<keyof Omit<HealthPoint, "at">, string> = {
  healthy: "#17803d",
  starting: "#1f5fbf",
  failing: "#b42318",
  stopped: "#6b7385",
};
const PLOT_HEIGHT = 120;

/**
 * How many of the module's nodes were healthy, starting, failing or stopped over time: one step
 * line per health (a count holds until the next change), the y axis from 0 to the most nodes.
 */
export function healthPlot(module: string, points: readonly HealthPoint[]): SVGSVGElement {
  const start = Date.parse(points[0]?.at ?? new Date().toISOString());
  const end = Math.max(now(), start + 1_000);
  const top = Math.max(1, ...points.map((p) => p.healthy + p.starting + p.failing + p.stopped));
  const x = xOf(start, end);
  const y = yOf(top);
  const lines = (Object.keys(HEALTH_COLOUR) as Array<keyof typeof HEALTH_COLOUR>).map((health) => {
    let d = "";
    points.forEach((p, i) => {
      const px = x(Date.parse(p.at));
      d += i === 0 ? `M${px},${y(p[health])}` : `H${px}V${y(p[health])}`;
    });
    d += `H${x(end)}`;
    return svg(
      "path",
      { d, fill: "none", stroke: HEALTH_COLOUR[health], "stroke-width": 2, "data-health": health },
      svg("title", {}, `${health}: ${points.at(-1)?.[health] ?? 0} now`),
    );
  });
  const last = points.at(-1);
  return plotOf(
    { class: "plot", id: "health-plot" },
    `the health of ${module}'s nodes over time`,
    `${top} nodes`,
    ...lines,
    ...(Object.keys(HEALTH_COLOUR) as Array<keyof typeof HEALTH_COLOUR>).map((h, i) =>
      legendOf(LABEL + i * 130, HEALTH_COLOUR[h], `■ ${h} ${last?.[h] ?? 0}`),
    ),
  );
}

const CALLS_COLOUR = "#1f5fbf";
const ERRORS_COLOUR = "#b42318";

/** A rate for a label: whole above 10, else two significant digits. */
const rate = (n: number): string => (n >= 10 ? n.toFixed(0) : n.toPrecision(2));

/**
 * One tool's calls per second (a step line) and errors per second (bars under it, on the same
 * axis: every error is a call) in each step of the series, the y axis from 0 to the busiest step.
 */
export function toolCallsPlot(series: ToolStatsSeries, tool: ToolSeries): SVGSVGElement {
  const seconds = series.stepMs / 1000;
  const steps = tool.calls.length;
  const width = (WIDTH - LABEL - 4) / Math.max(1, steps);
  const top = Math.max(...tool.calls.map((c) => c / seconds), 1 / seconds);
  const y = yOf(top);
  const x = (step: number): number => LABEL + step * width;
  // A step line: each step's rate held across its width.
  const d = tool.calls
    .map((calls, i) => `${i === 0 ? `M${x(0)},` : "V"}${y(calls / seconds)}H${x(i + 1)}`)
    .join("");
  const bars = tool.errors.flatMap((errors, i) =>
    errors === 0
      ? []
      : [
          svg(
            "rect",
            {
              x: x(i),
              y: y(errors / seconds),
              width: Math.max(1, width - 1),
              height: y(0) - y(errors / seconds),
              fill: ERRORS_COLOUR,
              "data-errors-step": i,
            },
            svg("title", {}, `${errors} errors`),
          ),
        ],
  );
  const codes = Object.entries(tool.codes)
    .map(([code, n]) => `${code} ${n}`)
    .join(", ");
  return plotOf(
    {
      class: "plot tool-plot",
      "data-tool": tool.tool,
      "data-calls": tool.totalCalls,
      "data-errors": tool.totalErrors,
    },
    `calls and errors per second of ${series.module}/${tool.tool}`,
    `${rate(top)}/s`,
    svg("path", { d, fill: "none", stroke: CALLS_COLOUR, "stroke-width": 2, "data-line": "calls" }),
    ...bars,
    legendOf(LABEL, CALLS_COLOUR, `■ calls ${tool.totalCalls}`),
    legendOf(
      LABEL + 130,
      ERRORS_COLOUR,
      `■ errors ${tool.totalErrors}${codes === "" ? "" : ` (${codes})`}`,
    ),
  );
}

/**
 * How many nodes ran the rollout's build over time (from the module's timeline: each node counts
 * from the first report of the build until it reports another), against the nodes admitted now.
 */
export function rolloutPlot(
  rollout: {
    readonly module: string;
    readonly build: string;
    readonly admitted: readonly string[];
  },
  timeline: ModuleTimeline,
): SVGSVGElement {
  const events = timeline.nodes
    .flatMap((n) => n.builds.map((b) => ({ node: n.node, build: b.build, at: Date.parse(b.at) })))
    .sort((a, b) => a.at - b.at);
  const current = new Map<string, string>();
  const points = events.map((e) => {
    current.set(e.node, e.build);
    return { at: e.at, on: [...current.values()].filter((b) => b === rollout.build).length };
  });
  const start = points[0]?.at ?? now();
  const end = Math.max(now(), start + 1_000);
  const top = Math.max(1, rollout.admitted.length, ...points.map((p) => p.on));
  const x = xOf(start, end);
  const y = yOf(top);
  const d =
    `M${x(start)},${y(0)}` + points.map((p) => `H${x(p.at)}V${y(p.on)}`).join("") + `H${x(end)}`;
  const on = points.at(-1)?.on ?? 0;
  return plotOf(
    { class: "plot rollout-plot", "data-rollout-plot": rollout.module, "data-on": on },
    `the nodes running ${rollout.build} of ${rollout.module} over time`,
    `${top} nodes`,
    svg("path", {
      d: `M${x(start)},${y(rollout.admitted.length)}H${x(end)}`,
      fill: "none",
      stroke: HEALTH_COLOUR.stopped,
      "stroke-dasharray": "4 3",
      "data-line": "admitted",
    }),
    svg("path", {
      d,
      fill: "none",
      stroke: HEALTH_COLOUR.healthy,
      "stroke-width": 2,
      "data-line": "on",
    }),
    legendOf(LABEL, HEALTH_COLOUR.healthy, `■ on ${shortBuild(rollout.build)}: ${on} now`),
    legendOf(LABEL + 200, HEALTH_COLOUR.stopped, `┄ admitted ${rollout.admitted.length}`),
  );
}
