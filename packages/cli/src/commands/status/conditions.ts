/**
 * `mesh conditions` and `mesh conditions resolve <module> <name>`: what modules and the mesh's
 * processes said (stream `mesh-conditions`, the last per module and name), and an operator's word
 * that a condition's cause has ended. The controller says the condition again under its subject
 * with `resolved` (the operator does not speak as a module), so it replaces the open one:
 * `mesh status` and the view no longer show it.
 */
import type { Command } from "commander";
import { askConditionResolve } from "@mesh/controller";
import { checkName, type Condition } from "@mesh/protocol";
import { connectToMesh } from "../../find-mesh.js";
import { unknownName } from "../../known.js";
import { ExitCode, act, meshVerb, out, printJson, type MeshOptions } from "../../verb.js";
import { readConditions } from "./status.js";
import { table } from "../../verb.js";

export interface ConditionsOptions extends MeshOptions {
  readonly module?: string;
  readonly open?: boolean;
}

export function registerConditionVerbs(program: Command): void {
  const conditions = act(
    meshVerb(
      program,
      "conditions",
      "What modules and the mesh said (the last condition per module and name), newest first.",
    )
      .option("--module <name>", "only this module")
      .option("--open", "only those not resolved (as status and the view show them)"),
    conditionsVerb,
  );
  act(
    meshVerb(
      conditions,
      "resolve",
      "Say that a condition's cause has ended: status and the view no longer show it.",
    )
      .argument("<module>", "whose condition it is (the MODULE column)")
      .argument("<name>", "its name (the NAME column)"),
    resolveVerb,
  );
}

export async function conditionsVerb(options: ConditionsOptions): Promise<ExitCode> {
  if (options.module !== undefined) checkName("module", options.module);
  await using bus = await connectToMesh(options);
  const conditions = (
    await readConditions(bus, options.module === undefined ? {} : { module: options.module })
  ).filter((c) => options.open !== true || c.resolved !== true);
  if (options.json === true) {
    printJson({ ok: true, conditions });
    return ExitCode.ok;
  }
  if (conditions.length === 0) {
    out(
      `no ${options.open === true ? "open " : ""}conditions${options.module === undefined ? "" : ` of ${options.module}`} are kept`,
    );
    return ExitCode.ok;
  }
  const rows = table(
    ["at", "level", "module", "name", "node", "state", "message"],
    conditions.map((c) => [
      c.at,
      c.level,
      c.module,
      c.name,
      c.node ?? "-",
      c.resolved === true ? "resolved" : "open",
      c.message,
    ]),
  );
  out(rows.join("\n"));
  return ExitCode.ok;
}

/**
 * Resolves the condition `<module>/<name>`: refused (exit 3) with the names it has when there is
 * no such condition; a condition already resolved is left as it is (exit 0, saying so).
 */
export async function resolveVerb(
  module: string,
  name: string,
  options: MeshOptions,
): Promise<ExitCode> {
  checkName("module", module);
  checkName("condition", name);
  await using bus = await connectToMesh(options);
  const kept = await readConditions(bus, { module });
  if (!kept.some((c) => c.name === name)) {
    throw unknownName({
      what: `condition of ${module}`,
      name,
      known: kept.map((c) => c.name).sort(),
      knownAs: `kept of ${module}`,
      fix: "`mesh conditions --module " + module + "` lists them",
      module,
      key: name,
    });
  }
  const answer = await askConditionResolve(bus, { module, name });
  return report(options, answer.condition, answer.resolved);
}

function report(options: MeshOptions, condition: Condition, changed: boolean): ExitCode {
  const { module, name } = condition;
  if (options.json === true) {
    printJson({ ok: true, resolved: changed, condition });
  } else if (changed) {
    out(`resolved ${module}/${name}: status and the view no longer show it`);
  } else {
    out(`${module}/${name} is already resolved (${condition.at}): nothing to do`);
  }
  return ExitCode.ok;
}
