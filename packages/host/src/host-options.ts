/**
 * What a host is started with, and what it reconciles (docs/architecture.md, "The host").
 */
import type { MeshBus } from "@mesh/bus";
import type { BackoffPolicy } from "@mesh/kit";
import type { Credential } from "@mesh/protocol";
import type { ArchiveLimits } from "./archives.js";
import type { HealthRules } from "./health.js";
import type { LauncherLink } from "./launch/launcher-link.js";
import type { FailedBuild } from "./launch/wire.js";
import type { TailLimits } from "./log-lines.js";

/** How often a module waiting for the bus is applied again while the bus is there. */
export const BUS_RETRY_MS = 2_000;

/** How long after a failed apply the host tries again by itself, unless told otherwise. */
export const DEFAULT_RETRY_MS = 30_000;

/** How often health, adopted processes and output files are looked at, unless told otherwise. */
export const DEFAULT_POLL_MS = 250;

/**
 * What a part of the host that speaks on the bus for its node is given (its conditions, its
 * processes' output): the node, the bus while it is there, and the host's log.
 */
export interface HostVoice {
  readonly node: string;
  readonly bus: () => MeshBus | undefined;
  readonly log: (line: string) => void;
}

/** What the host reconciles. */
export const HostKey = {
  /** The composition applied: the machine made to match it. */
  composition: "composition",
  /** What runs here, reported in mesh-have. */
  have: "have",
  /** The presence heartbeat. */
  presence: "presence",
} as const;
export type HostKey = (typeof HostKey)[keyof typeof HostKey];

export interface HostOptions {
  readonly node: string;
  /** Where the host keeps everything: state, cache, bundles, logs, the node key. */
  readonly root: string;
  /** The host's bus credential, or the path of its file. */
  readonly credential: Credential | string;
  readonly health?: Partial<HealthRules>;
  readonly backoff?: BackoffPolicy;
  /** Between attempts to open the bus side (a bus without JetStream for a while); 0.5 s doubling to 10 s by default. */
  readonly busBackoff?: BackoffPolicy;
  /** Between TERM and KILL when a process is stopped. */
  readonly graceMs?: number;
  /**
   * A runtime being replaced: how long the new one has to load what the old one served before
   * the old one is stopped anyway, and how long the old one may drain (finish the calls it has)
   * between TERM and KILL. Defaults: 30 s, and the longest call deadline (300 s) and 10 s.
   */
  readonly runtimeHandover?: { readonly readyMs?: number; readonly drainMs?: number };
  /**
   * This node's idle time for its runtime's modules (ms; 0: never idle): a module not called for
   * this long has its worker stopped until its next call. The runtime's default (10 min) when
   * omitted.
   */
  readonly runtimeIdleMs?: number;
  /** Between presence heartbeats. */
  readonly heartbeatMs?: number;
  /** How often health, adopted processes and output files are looked at. */
  readonly pollMs?: number;
  /**
   * How long after a failed apply the host tries again by itself (30 s by default), and the
   * longest wait after a pass that threw (1 s doubling).
   */
  readonly retryMs?: number;
  readonly archiveLimits?: ArchiveLimits;
  readonly tail?: TailLimits;
  readonly stopProcessesOnStop?: boolean;
  /** The machine's operator account and its home, said in the presence (the runtime runs as it). */
  readonly account?: { readonly name: string; readonly home?: string };
  /** Whether the machine is adopted (its own setup stays its administration's). */
  readonly adopted?: boolean;
  /**
   * The launcher that started this host build, which hands the node over to another build
   * (decision 0200); without one the host cannot be upgraded in place.
   */
  readonly launcher?: LauncherLink;
  /** The build that did not take the node over, when this host resumes after it (said as a condition). */
  readonly resumedFrom?: FailedBuild;
  /** Where the host says what it does (default: stderr). */
  readonly log?: (line: string) => void;
}
