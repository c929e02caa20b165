/**
 * Plots drawn by hand as SVG (a few shapes do not need a charting library): a module's timeline,
 * one row per node, each build a band from when the node took it to when it took the next; and
 * its nodes' health over time.
 */
import { clock, shortBuild } from "../format.js";
import { now } from "../model.js";
import type { HealthPoint, ModuleTimeline } from "../wire.js";

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
  const x = (t: number): number => LABEL + ((t - start) / (end - start)) * (WIDTH - LABEL - 4);
  const y = (n: number): number => 4 + (1 - n / top) * (PLOT_HEIGHT - 8);
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
  return svg(
    "svg",
    {
      class: "plot",
      id: "health-plot",
      viewBox: `0 0 ${WIDTH} ${PLOT_HEIGHT + 20}`,
      width: WIDTH,
      height: PLOT_HEIGHT + 20,
      role: "img",
    },
    svg("title", {}, `the health of ${module}'s nodes over time`),
    svg("text", { x: 0, y: 12, class: "plot-label" }, `${top} nodes`),
    svg("text", { x: 0, y: PLOT_HEIGHT - 2, class: "plot-label" }, "0"),
    ...lines,
    ...(Object.keys(HEALTH_COLOUR) as Array<keyof typeof HEALTH_COLOUR>).map((h, i) =>
      svg(
        "text",
        { x: LABEL + i * 130, y: PLOT_HEIGHT + 16, fill: HEALTH_COLOUR[h], class: "plot-legend" },
        `■ ${h} ${last?.[h] ?? 0}`,
      ),
    ),
  );
}
