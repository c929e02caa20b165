/** How values read on the page: ages, clock times, short build ids, badges and reason lists. */
import { h } from "./dom.js";
import { now } from "./model.js";

const HEALTH_LABEL: Record<string, string> = {
  healthy: "healthy",
  starting: "starting",
  failing: "failing",
  stopped: "stopped",
};

/** A have's health in words. */
export const healthLabel = (health: string): string => HEALTH_LABEL[health] ?? health;

/** How long ago, against the server's clock: "12s ago", "3m 4s ago", "2h 5m ago", "3d ago". */
export function age(iso: string | undefined): string {
  if (iso === undefined) return "—";
  const ms = now() - Date.parse(iso);
  if (!Number.isFinite(ms)) return "—";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s ago`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs}h ${m % 60}m ago`;
  return `${Math.floor(hrs / 24)}d ago`;
}

/** A time of day, 24-hour. */
export function clock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false });
}

/** A build id as a short label: long ids keep their start and end. */
export function shortBuild(build: string | undefined): string {
  if (build === undefined) return "—";
  return build.length > 14 ? `${build.slice(0, 6)}…${build.slice(-5)}` : build;
}

/** A coloured label: kind is ok, info, warn, bad or none. */
export const badge = (kind: string, text: string, title?: string): HTMLElement =>
  h("span", { class: `badge badge-${kind}`, title }, text);

/** Reasons as a list. */
export const reasonList = (reasons: readonly string[]): HTMLElement =>
  h("ul", { class: "reasons" }, ...reasons.map((r) => h("li", {}, r)));

/** `<node>.<module>` (or `<target>.<module>`) into its two names. */
export const splitKey = (key: string): [string, string] => {
  const dot = key.indexOf(".");
  return [key.slice(0, dot), key.slice(dot + 1)];
};

/** A short note where a section has nothing to show. */
export const emptyNote = (text: string): HTMLElement => h("p", { class: "empty" }, text);
