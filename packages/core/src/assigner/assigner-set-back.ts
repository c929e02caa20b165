/**
 * Rule 5 for the assigner's own cells, decided outside the assigner (decision 0191): a build of
 * `mesh-assigner` that its node reported failing cannot set itself back, so the controller asks
 * this, with what the assigner's rule would read — the want, the node's have history, the part's
 * builds and the retries' lift — and writes the set-back it answers. The assigner, once it runs
 * again, decides the same cell by the same rule and keeps it.
 */
import type { Build, Have, Want } from "@mesh/protocol";
import { marksOf } from "./model.js";
import type { HaveRecord } from "./snapshot.js";

/** The want set back to the build the node last ran healthy, or undefined when none is due. */
export function assignerSetBack(input: {
  readonly node: string;
  readonly module: string;
  readonly want: Want | undefined;
  readonly have: HaveRecord | undefined;
  /** The module's builds, by build id. */
  readonly builds: ReadonlyMap<string, Build>;
  /** The have revision up to which an operator's retry lifted the marks (0: none). */
  readonly lifted: number;
}): Want | undefined {
  const { node, module, want, have } = input;
  // A put is the operator's choice and is never set back (rule 5).
  if (want === undefined || want.rule === "put") return undefined;
  const marks = marksOf(have, input.lifted);
  if (!marks.has(want.build)) return undefined;
  const history = have?.history ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i];
    if (h?.health !== "healthy" || h.build === undefined || marks.has(h.build)) continue;
    const usable = input.builds.get(h.build);
    if (usable?.status !== "built" || usable.manifestDigest === undefined) continue;
    return {
      build: h.build,
      manifestDigest: usable.manifestDigest,
      fingerprint: "",
      rule: "set-back",
      reason:
        `${node} reported ${module} build ${want.build} failing, so it is set back to build ${h.build}, ` +
        `the build it last ran healthy — by the controller, since the assigner cannot set back its own ` +
        `build (decision 0191); the assigner's own rule keeps it there once it runs`,
    };
  }
  return undefined;
}

/** A node's have record after one more revision of its report (undefined: deleted). */
export function foldHave(
  record: HaveRecord | undefined,
  have: Have | undefined,
  revision: number,
): HaveRecord {
  const before: HaveRecord = record ?? { current: undefined, history: [] };
  if (have === undefined) return { current: undefined, history: before.history };
  return { current: have, history: [...before.history, { ...have, revision }].slice(-64) };
}
