/**
 * Who a request acts as. Without logins, the view's own bus (the operator's, as today). With
 * logins (decision 0171), the bus of the session's access — a principal of its own the
 * controller issued, with the operator's grant or a read-only one — so the bus, not the page,
 * decides what a session may do; and every action is recorded as a condition of `view` saying
 * who did what and how it went.
 */
import { createHash } from "node:crypto";
import { sayCondition, type MeshBus } from "@mesh/bus";
import { VIEW_CONDITION_MODULE } from "@mesh/core";
import type { Access } from "./browser/wire.js";
import type { Session } from "./view-logins.js";

export interface Acting {
  /** The bus a session of this access acts with. */
  readonly busOf: (access: Access) => MeshBus;
}

/** The bus this request acts with. */
export const actingBus = (bus: MeshBus, acting: Acting | undefined, session?: Session): MeshBus =>
  session === undefined || acting === undefined ? bus : acting.busOf(session.access);

/**
 * Records what a session did as a condition of `view`, named after what it acted on (so the
 * stream keeps the last word of each: bounded however many actions are done); without a session
 * (a view without logins) nothing is recorded. Best effort: a record that cannot be said is told
 * to `onProblem`, and the action's result stands.
 */
export async function recordAction(
  bus: MeshBus,
  session: Session | undefined,
  input: { what: string; about: string; ok: boolean; result: string },
  onProblem?: (what: string, error: unknown) => void,
): Promise<void> {
  if (session === undefined) return;
  const name = `act-${createHash("sha256").update(input.about).digest("hex").slice(0, 16)}`;
  try {
    await sayCondition(bus, {
      module: VIEW_CONDITION_MODULE,
      name,
      level: input.ok ? "info" : "warning",
      message:
        `${session.who} (view, ${session.access}) ${input.ok ? "ran" : "was refused"} ${input.what}: ${input.result}`.slice(
          0,
          4000,
        ),
    });
  } catch (error) {
    onProblem?.(`recording ${input.what} by ${session.who}`, error);
  }
}
