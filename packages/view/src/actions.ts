/**
 * What an operator does from the page: the same calls the CLI makes. The view does not write a
 * second implementation of them: whoever starts it (`mesh view`) hands it the CLI's own, as
 * `ViewActions`, and the view only checks each request's shape and calls them on its bus.
 */
import {
  ErrorCode,
  MeshError,
  ROLLOUT_ACTIONS,
  nameProblem,
  type ConfigDeclaration,
} from "@mesh/protocol";
import type { MeshBus } from "@mesh/bus";
import type { ActionName, ActionRequest, RolloutSteerAction } from "./browser/wire.js";

/** What an action did, as the CLI says it (its line), and its JSON answer. */
export interface ActionOutcome {
  readonly message: string;
  readonly result?: Readonly<Record<string, unknown>>;
}

/** A module's config keys as its manifest declares them, with the values set. */
export interface ConfigKeys {
  /** Undefined when no manifest of the module is known yet (not built): keys are unchecked. */
  readonly declared: Readonly<Record<string, ConfigDeclaration>> | undefined;
  /** Set values by key: `<key>` mesh-wide, `<key>.<node>` on one node. */
  readonly values: Readonly<Record<string, unknown>>;
}

type Input<A extends ActionName> = Extract<ActionRequest, { action: A }>["input"];

export type ViewActions = {
  readonly [A in ActionName]: (bus: MeshBus, input: Input<A>) => Promise<ActionOutcome>;
} & {
  readonly configKeys: (bus: MeshBus, module: string) => Promise<ConfigKeys>;
};

const refuse = (field: string, rule: string): never => {
  throw new MeshError(ErrorCode.INVALID_INPUT, `${field}: ${rule}`);
};

function name(kind: "module" | "node" | "config key" | "secret", value: unknown): string {
  const problem = nameProblem(kind, value);
  return problem === undefined ? (value as string) : refuse(kind, problem);
}

const optionalNode = (value: unknown): { node?: string } =>
  value === undefined || value === "" ? {} : { node: name("node", value) };

function text(field: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined || value === "") {
    return required ? refuse(field, "is required") : undefined;
  }
  if (typeof value !== "string") return refuse(field, "must be a string");
  return value;
}

/**
 * The request's action and input, every field checked (names against the name rules), or an
 * INVALID_INPUT naming the field.
 */
export function parseAction(body: unknown): ActionRequest {
  const { action, input: raw } = (body ?? {}) as { action?: unknown; input?: unknown };
  const input = (raw ?? {}) as Record<string, unknown>;
  const module = (): string => name("module", input["module"]);
  /** The module, `more` and, when given, the node: checked in that order. */
  const cell = <T extends object>(more: () => T) => {
    const m = module();
    return { module: m, ...more(), ...optionalNode(input["node"]) };
  };
  switch (action) {
    case "assign":
      return { action, input: cell(() => ({ remove: input["remove"] === true })) };
    case "put": {
      const build = text("build", input["build"], false);
      const why = text("why", input["why"], false);
      return {
        action,
        input: cell(() => ({
          ...(build === undefined ? {} : { build }),
          ...(why === undefined ? {} : { why }),
        })),
      };
    }
    case "retry":
      return { action, input: cell(() => ({})) };
    case "configSet":
      return {
        action,
        input: cell(() => ({
          key: name("config key", input["key"]),
          value: text("value", input["value"], true) ?? "",
        })),
      };
    case "configUnset":
      return { action, input: cell(() => ({ key: name("config key", input["key"]) })) };
    case "secretSet":
      return {
        action,
        input: {
          module: module(),
          name: name("secret", input["name"]),
          value: text("value", input["value"], true) ?? "",
        },
      };
    case "register":
      return { action, input: { spec: text("spec", input["spec"], true) ?? "" } };
    case "rolloutSteer":
      return { action, input: { module: module(), ...steerOf(input) } };
    default:
      return refuse(
        "action",
        `${JSON.stringify(action)} is not one the view does; one of assign, put, retry, configSet, configUnset, secretSet, register, rolloutSteer`,
      );
  }
}

/** Calls the action the request names. */
export function runAction(
  actions: ViewActions,
  bus: MeshBus,
  request: ActionRequest,
): Promise<ActionOutcome> {
  // `ViewActions` gives each action the input its request carries, so the action a request names
  // takes that request's input; TypeScript cannot follow the pair through one index, hence the cast.
  const run = actions[request.action] as (
    bus: MeshBus,
    input: ActionRequest["input"],
  ) => Promise<ActionOutcome>;
  return run(bus, request.input);
}

/** A rollout steer's word, and the config key when it steers a config value's rollout. */
function steerOf(input: Record<string, unknown>): {
  steer: RolloutSteerAction;
  config?: string;
} {
  const steer = input["steer"];
  if (!ROLLOUT_ACTIONS.some((a) => a === steer)) {
    return refuse("steer", `${JSON.stringify(steer)} is not one of ${ROLLOUT_ACTIONS.join(", ")}`);
  }
  const config = input["config"] === undefined ? undefined : name("config key", input["config"]);
  return { steer: steer as RolloutSteerAction, ...(config === undefined ? {} : { config }) };
}
