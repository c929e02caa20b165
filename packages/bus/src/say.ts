/**
 * What a process says on the bus about itself: which states it keeps (so the broker can grant
 * readers) and conditions an operator should know about. Both go into streams that keep the
 * last word per subject, so a reader that starts later still hears it.
 */
import {
  Condition,
  ErrorCode,
  Keeps,
  MeshError,
  conditionSubject,
  keepsSubject,
  type ConditionLevel,
} from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, withContext } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

export interface KeptState {
  readonly name: string;
  readonly readable: boolean;
}

/** Says, as the bus's credential, which states its process keeps. */
export async function sayKeeps(
  bus: MeshBus,
  states: readonly KeptState[],
  options: { signal?: AbortSignal; now?: () => Date } = {},
): Promise<void> {
  const { node, module } = bus.credential;
  const parsed = Keeps.safeParse({
    node,
    module,
    states: [...states].sort((a, b) => a.name.localeCompare(b.name)),
    at: (options.now ?? (() => new Date()))().toISOString(),
  });
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the states ${node}.${module} says it keeps are not well-formed: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}; name states as the manifest does`,
      { node, module, cause: parsed.error },
    );
  }
  const message: Keeps = parsed.data;
  const subject = keepsSubject(node, module);
  const doing = `saying what ${node}.${module} keeps`;
  await withContext({ doing, subject }, () =>
    abortable(natsOf(bus).js.publish(subject, JSON.stringify(message)), options.signal, doing),
  );
}

/**
 * Says what the process keeps now and again after every reconnect (the stream may have been
 * lost with a server), until the signal aborts. Failures are handed to `onError`, never thrown:
 * not being heard is not a reason to stop working.
 */
export function keepSayingKeeps(
  bus: MeshBus,
  states: readonly KeptState[],
  options: { signal: AbortSignal; onError?: (error: MeshError) => void },
): void {
  const sayNow = () =>
    sayKeeps(bus, states, { signal: options.signal }).catch((error: unknown) => {
      if (!options.signal.aborted) options.onError?.(error as MeshError);
    });
  void sayNow();
  bus.onConnection(
    (now) => {
      if (now.status === "connected") void sayNow();
    },
    { signal: options.signal },
  );
}

export interface SayCondition {
  readonly name: string;
  readonly level: ConditionLevel;
  readonly message: string;
  /** Whose condition it is; the credential's module when omitted. Only the controller and assigner speak for others. */
  readonly module?: string;
  readonly node?: string;
  /** Its cause has ended: replaces the open condition of the same module and name. */
  readonly resolved?: boolean;
}

/** Says a condition; the stream keeps the last one per module and name. */
export async function sayCondition(
  bus: MeshBus,
  condition: SayCondition,
  options: { signal?: AbortSignal; now?: () => Date } = {},
): Promise<Condition> {
  const module = condition.module ?? bus.credential.module;
  const parsed = Condition.safeParse({
    module,
    name: condition.name,
    level: condition.level,
    message: condition.message,
    ...(condition.node === undefined ? {} : { node: condition.node }),
    ...(condition.resolved === true ? { resolved: true } : {}),
    at: (options.now ?? (() => new Date()))().toISOString(),
  });
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the condition ${JSON.stringify(condition.name)} of ${module} is not well-formed: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      { module, cause: parsed.error },
    );
  }
  const subject = conditionSubject(module, condition.name);
  const doing = `saying the condition ${condition.name} of ${module}`;
  await withContext({ doing, subject, module }, () =>
    abortable(natsOf(bus).js.publish(subject, JSON.stringify(parsed.data)), options.signal, doing),
  );
  return parsed.data;
}
