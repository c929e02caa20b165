/**
 * The controller's condition endpoint: an operator's `mesh conditions resolve <module> <name>`.
 * A module's conditions are said under its own subject, which the operator's grant may not
 * publish to (the operator does not speak as a module); the controller, which speaks for the
 * mesh, says the condition again with `resolved`, so it replaces the open one.
 */
import {
  conditionsSource,
  readStanding,
  sayCondition,
  type EndpointSpec,
  type MeshBus,
} from "@mesh/bus";
import type { Condition } from "@mesh/protocol";
import { ErrorCode, MeshError, Principal, conditionSubject } from "@mesh/protocol";
import { ConditionResolve, type AnswerOf, type AskOf } from "./controller-api.js";
import { answering } from "./ask-input.js";

export interface ConditionEndpointsInput {
  readonly bus: MeshBus;
  readonly now: () => Date;
}

export function conditionEndpoints(input: ConditionEndpointsInput): EndpointSpec[] {
  return [answering(ConditionResolve, (ask) => conditionResolve(input, ask))];
}

async function conditionResolve(
  input: ConditionEndpointsInput,
  { module, name }: AskOf<typeof ConditionResolve>,
): Promise<AnswerOf<typeof ConditionResolve>> {
  const kept = await lastCondition(input.bus, conditionSubject(module, name));
  if (kept === undefined) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `no condition ${JSON.stringify(name)} of ${module} is kept; \`mesh conditions --module ${module}\` lists them`,
      { module, key: name },
    );
  }
  if (kept.resolved === true) return { resolved: false, condition: kept };
  const message = `resolved by the ${Principal.operator}; it said: ${kept.message}`;
  const condition = await sayCondition(
    input.bus,
    {
      module,
      name,
      level: "info",
      message: message.length <= 4000 ? message : `${message.slice(0, 3997)}...`,
      ...(kept.node === undefined ? {} : { node: kept.node }),
      resolved: true,
    },
    { now: input.now },
  );
  return { resolved: true, condition };
}

/** The condition the stream keeps under one subject, if any. */
async function lastCondition(bus: MeshBus, subject: string): Promise<Condition | undefined> {
  const kept = await readStanding(
    conditionsSource(bus, { filter: subject, deliver: "last-per-subject" }),
  );
  return [...kept.values()][0];
}
