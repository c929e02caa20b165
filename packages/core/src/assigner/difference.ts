/** Every difference between a want, what the controller composed and what the node has. */
import { nodeModuleKey, type Difference, type Want } from "@mesh/protocol";
import type { Rule } from "@mesh/protocol";
import type { Unwanted } from "./model.js";
import type { AssignerSnapshot } from "./snapshot.js";

/**
 * The rules that withhold a placed module for a cause an operator acts on. `placed` (not
 * assigned there, or the node never present), `built` (nothing built yet: the builds say why)
 * and `checked` (the node's composition verdict says why; a filtered want is no difference)
 * are none.
 */
const HELD_BACK: ReadonlySet<Rule> = new Set<Rule>(["halt", "widening"]);

export function differenceOf(
  snapshot: AssignerSnapshot,
  node: string,
  module: string,
  want: Want | undefined,
  unwanted: Unwanted | undefined,
): Difference | undefined {
  const composed = snapshot.composed.get(node)?.modules?.[module]?.build;
  const have = snapshot.have.get(nodeModuleKey(node, module))?.current;
  const haveBuild = have === undefined || have.health === "stopped" ? undefined : have.build;
  const reasons: string[] = [];
  if (want === undefined) {
    if (composed !== undefined || haveBuild !== undefined) {
      const what =
        composed !== undefined ? `${composed} is composed` : `${node} runs ${haveBuild ?? ""}`;
      reasons.push(`nothing is wanted (${unwanted?.reason ?? "not placed"}), yet ${what}`);
    } else if (unwanted !== undefined && HELD_BACK.has(unwanted.rule)) {
      // Placed and built, yet a rule holds it back and nothing runs: said here, or a reader sees
      // only an assigned module without a want (a halted first rollout read as "the assigner has
      // not written its want yet", lifecycle soak seed 418047943).
      reasons.push(`nothing is wanted: ${unwanted.reason}`);
    }
  } else {
    if (composed !== want.build) {
      reasons.push(
        `wanted ${want.build}, composed ${composed ?? "nothing"}: the controller has not composed the want yet`,
      );
    }
    if (haveBuild !== want.build) {
      reasons.push(
        `wanted ${want.build}, ${node} has ${haveBuild ?? "nothing"}: the node has not applied it yet`,
      );
    }
  }
  if (have?.health === "failing") {
    const error = have.lastError === undefined ? "" : `: ${have.lastError}`;
    reasons.push(`${node} reports ${have.build ?? "it"} failing${error}`);
  }
  if (reasons.length === 0) return undefined;
  return {
    ...(want === undefined ? {} : { want: want.build }),
    ...(composed === undefined ? {} : { composed }),
    ...(have?.build === undefined ? {} : { have: have.build }),
    reasons,
  };
}
