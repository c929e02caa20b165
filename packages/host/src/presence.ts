/**
 * The node's presence (`mesh-presence.<node>`): facts about the machine, the public key that
 * needs are sealed to, and the time of this heartbeat.
 */
import { hostname, platform, arch } from "node:os";
import { DEFAULT_NODE_ROOT, type Presence } from "@mesh/protocol";

export function presenceOf(input: {
  readonly node: string;
  readonly publicKey: string;
  readonly version: string;
  readonly now: Date;
  readonly account?: { readonly name: string; readonly home?: string };
  readonly adopted?: boolean;
  /** The host's root, said when it is not the production default, so bundles are composed under it. */
  readonly root?: string;
  /** The last time the host was without the bus, once it is back. */
  readonly lastOutage?: { readonly lost: string; readonly back: string };
}): Presence {
  const { account, adopted } = input;
  return {
    node: input.node,
    facts: {
      hostname: hostname(),
      os: platform(),
      arch: arch(),
      ...(account === undefined ? {} : { account: account.name }),
      ...(account?.home === undefined ? {} : { accountHome: account.home }),
      ...(adopted === undefined ? {} : { adopted }),
      ...(input.root === undefined || input.root === DEFAULT_NODE_ROOT ? {} : { root: input.root }),
      version: input.version,
    },
    publicKey: input.publicKey,
    heartbeat: input.now.toISOString(),
    ...(input.lastOutage === undefined ? {} : { lastOutage: input.lastOutage }),
  };
}
