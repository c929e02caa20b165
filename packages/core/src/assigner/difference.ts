/** Every difference between a want, what the controller composed and what the node has. */
import { nodeModuleKey, type Difference, type Want } from "@mesh/protocol";
import type { Unwanted } from "./model.js";
import type { AssignerSnapshot } from "./snapshot.js";

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
