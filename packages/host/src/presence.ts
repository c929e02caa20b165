/**
 * The node's presence (`mesh-presence.<node>`): facts about the machine, the public key that
 * needs are sealed to, and the time of this heartbeat.
 */
import { hostname, platform, arch } from "node:os";
import type { Presence } from "@mesh/protocol";

export function presenceOf(input: {
  readonly node: string;
  readonly publicKey: string;
  readonly version: string;
  readonly now: Date;
}): Presence {
  return {
    node: input.node,
    facts: { hostname: hostname(), os: platform(), arch: arch(), version: input.version },
    publicKey: input.publicKey,
    heartbeat: input.now.toISOString(),
  };
}
