/**
 * Plots drawn by hand as SVG (a few shapes do not need a charting library): a module's timeline,
 * one row per node, each build a band from when the node took it to when it took the next.
 */
import { clock, shortBuild } from "../format.js";
import { now } from "../model.js";
import type { ModuleTimeline } from "../wire.js";

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
