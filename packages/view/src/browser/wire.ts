/**
 * What the view's server and the page say to each other: the sources the page shows, the first
 * state, each change, and the shapes of the POST bodies. Types and constants only, so the server
 * (Node) and the page (the browser) share them without either pulling in the other's world.
 */
import type { Build } from "@mesh/protocol";

/** Everything the page shows, by where it comes from: the buckets, and the conditions stream. */
export const Source = {
  modules: "mesh-modules",
  builds: "mesh-builds",
  assignments: "mesh-assignments",
  puts: "mesh-puts",
  presence: "mesh-presence",
  wants: "mesh-wants",
  have: "mesh-have",
  compositions: "mesh-compositions",
  differences: "mesh-differences",
  asks: "mesh-asks",
  answers: "mesh-answers",
  conditions: "mesh-conditions",
} as const;
export type Source = (typeof Source)[keyof typeof Source];

/**
 * A build as the page first gets it: without its log, which can be long and is fetched when
 * someone opens it (`GET /api/build-log?key=<module>.<build>`).
 */
export type BuildSummary = Omit<Build, "log"> & { readonly logLines: number };

/** The whole state, sent once when a page connects (after every watch handed what stands). */
export interface Snapshot {
  /** The server's clock when it was sent: the page measures heartbeat ages against it. */
  readonly at: string;
  /** Per source, each key's value (as the bus holds it; builds as BuildSummary). */
  readonly entries: Readonly<Record<Source, Readonly<Record<string, unknown>>>>;
  /** Per source that cannot be read, why (a missing bucket, a permission). */
  readonly problems: Readonly<Partial<Record<Source, string>>>;
  readonly bus: BusState;
}

/** One key's new value; no value means the key was deleted. */
export interface Change {
  readonly source: Source;
  readonly key: string;
  readonly value?: unknown;
}

export type BusState = "connected" | "disconnected";

/** The server-sent events, by event name. */
export const ViewEvent = {
  snapshot: "snapshot",
  change: "change",
  problem: "problem",
  bus: "bus",
} as const;

/** A problem with one source, or its end (`problem` absent). */
export interface SourceProblem {
  readonly source: Source;
  readonly problem?: string;
}

/** The header every POST must carry: a cross-site form cannot set it. */
export const CSRF_HEADER = "x-mesh-view";
export const CSRF_VALUE = "1";

/** `POST /api/answer` */
export interface AnswerRequest {
  readonly id: string;
  readonly answer: "yes" | "no";
}

/** `POST /api/call` */
export interface CallRequest {
  readonly subject: string;
  readonly input: unknown;
}

/** A tool call's outcome, or any refused POST's (with `ok: false`). */
export type CallResult =
  | { readonly ok: true; readonly result: unknown; readonly ms: number }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

/** `GET /api/tools`: one tool on one node, as discovery found it. */
export interface ToolEntry {
  readonly node: string;
  readonly module: string;
  readonly tool: string;
  readonly subject: string;
  readonly description: string;
  readonly input: unknown;
  readonly output: unknown;
  readonly problems: readonly string[];
}

/** A node's presence older than this is shown as gone (the host writes it far more often). */
export const PRESENCE_STALE_MS = 60_000;
