/**
 * The host's resource kinds, one file each (its units, its plan, its steps), and the one list that
 * orders their steps in a pass. The order is what makes a pass safe: every check before anything
 * stops (a bad bundle or a need not sealed yet fails or holds its module, which keeps what runs),
 * then the removes, the processes first; then the puts, needs and bundles before the processes
 * that read them. A new kind is a file here, its part of the desired state and the plan joined in
 * `../plan.ts`, and its steps in this list.
 */
import type { Desired, Plan } from "../plan.js";
import { archiveKind } from "./archive.js";
import { hostKind } from "./host.js";
import type { Step } from "./kind.js";
import { needKind } from "./need.js";
import { processKind } from "./process.js";

export { archiveKind, hostKind, needKind, processKind };

/** A pass, step by step. */
export const STEPS: readonly Step<Desired, Plan>[] = [
  archiveKind.check, // fetch, verify and unpack beside every new bundle
  hostKind.check, // and a new host build
  needKind.check, // a need with nothing sealed yet: its module waits
  processKind.remove, // stop what goes or restarts (the runtime is replaced below instead)
  needKind.remove,
  archiveKind.remove,
  needKind.apply, // written before the bundles move: a refused one leaves its module's as it was
  archiveKind.apply,
  processKind.apply, // start, or replace the runtime without a gap
  hostKind.apply, // last: hand the node over to a new host build
];
