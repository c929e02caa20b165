/**
 * The host as a module (decision 0200): its module name, its resource and the conditions its
 * hosts say; and what a composition may ask of the host that applies it (decision 0202).
 *
 * A host build knows the features of its own version (`HOST_FEATURES`); a composition whose
 * resources use one that not every host has names it in `requires`, with the earliest mesh version
 * whose host applies them all. A host that lacks one refuses the composition (it keeps what it
 * runs and says which version it needs) but still takes the composition's `host` resource, so it
 * can be upgraded to one that applies it.
 */
import { z } from "zod";
import { checkName } from "./names.js";

/**
 * The module whose build is the host itself (decision 0200): where it is wanted, a node's
 * composition names its build as the one `host` resource, and the node's host hands over to it.
 */
export const HOST_MODULE = "mesh-host";

/** The resource that names the host build a node runs. */
export const HOST_RESOURCE_ID = `${HOST_MODULE}.host`;

/** The condition (of `mesh-host`) a node's host says when a host build did not take the node over. */
export const hostUpgradeCondition = (node: string): string => `upgrade-${checkName("node", node)}`;

/** The condition (of `mesh-host`) a node's host says when its composition needs a newer host. */
export const hostVersionCondition = (node: string): string =>
  `host-version-${checkName("node", node)}`;

/** Each feature a composition may require, and the mesh version whose host first applies it. */
export const HOST_FEATURES: Readonly<Record<string, string>> = {
  /** The `host` resource: the node's host build, handed over to (decision 0200). */
  "host-build": "0.1.0",
};

/** What a composition requires of its host: never changed incompatibly (old hosts read it). */
export const CompositionRequires = z
  .object({
    /** The features its resources use, sorted. */
    features: z.array(z.string().min(1)).min(1),
    /** The earliest mesh version whose host applies them all. */
    version: z.string().min(1),
  })
  .strict();
export type CompositionRequires = z.infer<typeof CompositionRequires>;

/** What requiring `features` means (sorted, with the newest version among them), or undefined for none. */
export function requiresOf(features: Iterable<string>): CompositionRequires | undefined {
  const sorted = [...new Set(features)].sort();
  if (sorted.length === 0) return undefined;
  let version = "0";
  for (const feature of sorted) {
    const since = HOST_FEATURES[feature] ?? "0";
    if (compareVersions(since, version) > 0) version = since;
  }
  return { features: sorted, version };
}

/** The features of `requires` that a host knowing `known` lacks, sorted. */
export function missingFeatures(
  requires: { readonly features: readonly string[] } | undefined,
  known: Readonly<Record<string, string>> = HOST_FEATURES,
): string[] {
  return (requires?.features ?? []).filter((f) => !Object.hasOwn(known, f)).sort();
}

/**
 * Orders two version strings by their numbers (`0.10.0` after `0.9.1`), then by what is left
 * (`0.2.0-rc` before `0.2.0`); negative, zero or positive as `a` is before, equal or after `b`.
 */
export function compareVersions(a: string, b: string): number {
  const numbers = (v: string): number[] =>
    (v.split(/[-+]/, 1)[0] ?? "").split(".").map((n) => Number.parseInt(n, 10) || 0);
  const [x, y] = [numbers(a), numbers(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  const rest = (v: string): string => v.slice((v.split(/[-+]/, 1)[0] ?? "").length);
  const [ra, rb] = [rest(a), rest(b)];
  if (ra === rb) return 0;
  if (ra === "") return 1; // a release is after its pre-releases
  if (rb === "") return -1;
  return ra < rb ? -1 : 1;
}
