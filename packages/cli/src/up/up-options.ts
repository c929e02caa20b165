/** What `mesh up` is asked for on its command line: shared by the verb and what it starts. */
import type { MachineOptions } from "../commands/node/host.js";
import type { BusChoice } from "./up-bus.js";

export interface UpOptions extends MachineOptions, BusChoice {
  readonly root: string;
  readonly node?: string;
  readonly json?: boolean;
  readonly exitWhenReady?: boolean;
  /** Also register and assign the examples, and wait until they are healthy. */
  readonly demo?: boolean;
  /** Leave the runtime module unassigned (its tools are then served nowhere). */
  readonly runtime?: boolean;
  /** Only the bus, none of the mesh's processes: what the first cut did, for tests of the bus alone. */
  readonly busOnly?: boolean;
  /** The view's port on loopback; 0 (default) picks a free one. */
  readonly viewPort?: number;
  /** How long `--demo` waits for the examples, in ms. */
  readonly demoTimeoutMs?: number;
  /** The node delivery's parts run on (decision 0190): where they are, else this machine's node. */
  readonly deliveryOn?: string;
  /** Accounts mode: how long the controller's credentials live (decision 0150). */
  readonly credentialLifetimeMs?: number;
}
