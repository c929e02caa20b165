/**
 * A small fleet for the rollout tests (not exported from the package): nodes running build 1 of
 * hello healthy, build 2 built, and a clock that every node's heartbeat follows. Each step moves
 * the clock, lets each node given build 2 report it as its behaviour says, and makes a pass.
 */
import type { Have, RolloutPolicy, RolloutSteer, Want } from "@mesh/protocol";
import type { AssignResult } from "./assign.js";
import {
  after,
  build,
  helloOn,
  manifestOf,
  pass,
  reportHave,
  retry,
  setPolicy,
  tick,
  type ClockedFleet,
} from "./fixtures.js";

export type Behaviour = (node: string, seconds: number) => Have["health"] | "silent";

export interface Fleet extends ClockedFleet {
  readonly b1: string;
  readonly b2: string;
  /** When each node first reported build 2 (seconds). */
  readonly started: Map<string, number>;
}

/**
 * `count` nodes on build 1, build 2 built; `policy` is the operator's (`mesh rollout set`),
 * `manifestPolicy` build 2's manifest's `rollout:`.
 */
export function fleet(
  count: number,
  policy?: RolloutPolicy,
  manifestPolicy?: RolloutPolicy,
): Fleet {
  const { s, nodes } = helloOn(count);
  const b1 = build(s, "hello", 1);
  pass(s);
  for (const n of nodes) reportHave(s, n, "hello", b1, "healthy");
  pass(s);
  setPolicy(s, "hello", policy);
  const b2 = build(
    s,
    "hello",
    2,
    manifestPolicy === undefined
      ? {}
      : { manifest: manifestOf("hello", 2, { rollout: manifestPolicy }) },
  );
  return { s, nodes, b1, b2, clock: 0, started: new Map() };
}

/** Healthy as soon as given. */
export const healthy: Behaviour = () => "healthy";

/**
 * Moves the clock, beats every node, lets each node given build 2 report as `behaviour` says (a
 * report only when its health changes), and makes a pass.
 */
export function step(f: Fleet, seconds: number, behaviour: Behaviour = healthy): AssignResult {
  prepare(f, seconds, behaviour);
  return pass(f.s);
}

/** A step's inputs (the clock, the beats, the reports) without its pass. */
export function prepare(f: Fleet, seconds: number, behaviour: Behaviour = healthy): void {
  const now = tick(f, seconds);
  for (const n of f.nodes) {
    const want = f.s.own.wants.get(`${n}.hello`);
    const current = f.s.have.get(`${n}.hello`)?.current;
    if (want === undefined) continue;
    if (want.build !== f.b2) {
      if (current?.build !== want.build)
        reportHave(f.s, n, "hello", want.build, "healthy", { since: now });
      continue;
    }
    if (!f.started.has(n)) f.started.set(n, f.clock);
    const health = behaviour(n, f.clock - (f.started.get(n) ?? f.clock));
    if (health === "silent") continue;
    if (current?.build === f.b2 && current.health === health) continue;
    reportHave(f.s, n, "hello", f.b2, health, {
      since: now,
      ...(health === "failing" ? { lastError: "exited with 1" } : {}),
    });
  }
}

/**
 * An operator's word on the rollout; a retry also lifts the failed marks of every node, as
 * `mesh rollout retry` does (through `mesh-retries`).
 */
export function steer(f: Fleet, action: RolloutSteer["action"], attempt?: number): void {
  if (action === "retry") retry(f.s, "all", "hello");
  f.s.rolloutSteers.set("hello", {
    build: f.b2,
    action,
    ...(attempt === undefined ? {} : { attempt }),
    by: "ada",
    at: after(f.clock),
  });
}

/** The nodes wanting a build, sorted. */
export function wanting(f: Fleet, build: string): string[] {
  return f.nodes.filter((n) => f.s.own.wants.get(`${n}.hello`)?.build === build);
}

/** The want of hello on a node. */
export const wantOn = (f: Fleet, node: string): Want | undefined =>
  f.s.own.wants.get(`${node}.hello`);

export const record = (f: Fleet) => f.s.own.rollouts.get("hello");
