/**
 * A small fleet for the config rollout tests (not exported from the package): nodes running
 * build 1 of hello healthy with `greeting` "Hello" mesh-wide, and a clock every node's heartbeat
 * follows. Each step moves the clock, lets each node see the value mesh-config gives it (as a
 * host reports it in `have.config`) and report its health as its behaviour says, and makes a pass.
 */
import type {
  ConfigRollout,
  ConfigRolloutAction,
  ConfigRolloutRequest,
  Have,
  RolloutPolicy,
} from "@mesh/protocol";
import { fingerprintOf } from "../fingerprint.js";
import type { AssignResult } from "./assign.js";
import {
  T0,
  after,
  build,
  helloOn,
  pass,
  reportHave,
  setPolicy,
  tick,
  type ClockedFleet,
} from "./fixtures.js";

/** How a node runs with a value, `seconds` after it first saw it. */
export type ConfigBehaviour = (node: string, value: unknown, seconds: number) => Have["health"];

export interface ConfigFleet extends ClockedFleet {
  readonly b1: string;
}

export const KEY = "hello.greeting";

export function configFleet(count: number, policy?: RolloutPolicy): ConfigFleet {
  const { s, nodes } = helloOn(count);
  s.own.config.set(KEY, { value: "Hello", by: "ada", at: T0 });
  setPolicy(s, "hello", policy);
  const b1 = build(s, "hello", 1);
  pass(s);
  const f = { s, nodes, b1, clock: 0 };
  stepConfig(f, 0);
  return f;
}

/** `mesh config set hello greeting <value> --rollout` at the fleet's clock. */
export function request(f: ConfigFleet, value: ConfigRolloutRequest["value"]): void {
  f.s.configRollouts.set(KEY, { value, by: "ada", at: after(f.clock) });
}

/** An operator's word on the rollout of the request standing. */
export function steerConfig(f: ConfigFleet, action: ConfigRolloutAction): void {
  const r = f.s.configRollouts.get(KEY);
  if (r === undefined) throw new Error("no request to steer");
  f.s.configRollouts.set(KEY, { ...r, steer: { action, by: "ada", at: after(f.clock) } });
}

/** The value a node's module sees: its own, else the mesh-wide one. */
export function valueOn(f: ConfigFleet, node: string): unknown {
  return (f.s.own.config.get(`${KEY}.${node}`) ?? f.s.own.config.get(KEY))?.value;
}

export const configRecord = (f: ConfigFleet): ConfigRollout | undefined =>
  f.s.own.configWaves.get(KEY);

/** The nodes whose module sees `value` now. */
export const seeing = (f: ConfigFleet, value: unknown): string[] =>
  f.nodes.filter((n) => valueOn(f, n) === value);

/** Each step's inputs (clock, beats, reports) without its pass. */
export function prepareConfig(
  f: ConfigFleet,
  seconds: number,
  behaviour: ConfigBehaviour = () => "healthy",
): void {
  const now = tick(f, seconds);
  for (const n of f.nodes) {
    const current = f.s.have.get(`${n}.hello`)?.current;
    const value = valueOn(f, n);
    const fingerprint = fingerprintOf(value ?? null);
    const config =
      current?.config?.values["greeting"] === fingerprint
        ? current.config
        : { values: { greeting: fingerprint }, since: now };
    const health = behaviour(n, value, (Date.parse(now) - Date.parse(config.since)) / 1000);
    if (current?.config === config && current.health === health) continue;
    reportHave(f.s, n, "hello", f.b1, health, {
      since: current?.health === health ? current.since : now,
      config,
      ...(health === "failing" ? { lastError: "greeting refused" } : {}),
    });
  }
}

export function stepConfig(
  f: ConfigFleet,
  seconds: number,
  behaviour?: ConfigBehaviour,
): AssignResult {
  prepareConfig(f, seconds, behaviour);
  return pass(f.s);
}
