/**
 * What the view's server and the page say to each other: the sources the page shows, the first
 * state, each change, and the shapes of the POST bodies. Types and constants only, so the server
 * (Node) and the page (the browser) share them without either pulling in the other's world.
 */
import type {
  Build,
  CompositionVerdict,
  Difference,
  Have,
  Presence,
  Put,
  ServedTool,
  Want,
} from "@mesh/protocol";

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
  /** The assigner's record of each module's rollout (issue 22): one key per module. */
  rollouts: "mesh-rollouts",
  /** The assigner's record of each config value's rollout (decision 0131): per module and key. */
  configWaves: "mesh-config-waves",
} as const;
export type Source = (typeof Source)[keyof typeof Source];

/**
 * The sources a page gets whole, then change by change: their size does not grow with the
 * number of nodes.
 */
export const PAGE_SOURCES = [
  Source.modules,
  Source.builds,
  Source.asks,
  Source.answers,
  Source.conditions,
  Source.rollouts,
  Source.configWaves,
] as const;

/**
 * The sources with a key per node (or per node and module): kept on the server, and shown to a
 * page as the fleet's summary and the grid's pages, so what a page gets stays bounded however
 * large the fleet.
 */
export const FLEET_SOURCES = [
  Source.presence,
  Source.wants,
  Source.have,
  Source.differences,
  Source.compositions,
  Source.puts,
  Source.assignments,
] as const;

/**
 * A build as the page first gets it: without its log, which can be long and is fetched when
 * someone opens it (`GET /api/build-log?key=<module>.<build>`).
 */
export type BuildSummary = Omit<Build, "log"> & { readonly logLines: number };

/** The state, sent once when a page connects (after every watch handed what stands). */
export interface Snapshot {
  /** The server's clock when it was sent: the page measures heartbeat ages against it. */
  readonly at: string;
  /** Per page source, each key's value (as the bus holds it; builds as BuildSummary). */
  readonly entries: Readonly<Partial<Record<Source, Readonly<Record<string, unknown>>>>>;
  /** The fleet sources, summarised. */
  readonly fleet: FleetSummary;
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
  /** A new FleetSummary: sent when the fleet moved, bursts coalesced. */
  fleet: "fleet",
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

/** `GET /api/tools`: one tool on one node, as discovery found it (a few nodes of each tool). */
export interface ToolEntry extends ServedTool {
  /** How many nodes serve this tool (the answer lists at most 20 of them). */
  readonly nodeCount: number;
}

/** Whether a node is present (heartbeat younger than the mesh's threshold), gone, or never seen. */
export type NodeState = "present" | "gone" | "never";

/** Where a (node, module) stands, why, and what fixes it (the fleet's read model in @mesh/core). */
export interface CellVerdict {
  readonly state: "healthy" | "starting" | "not-running";
  readonly reason: string;
  readonly fix?: string;
}

/** The fleet in numbers, and the first differences: small whatever the fleet's size. */
export interface FleetSummary {
  /** Moves whenever what a grid page shows may have changed: a page then asks for its page again. */
  readonly version: number;
  readonly nodes: { readonly total: number } & Readonly<Record<NodeState, number>>;
  readonly modules: number;
  /** Every assigned (node, module), by the read model's verdict. */
  readonly cells: {
    readonly healthy: number;
    readonly starting: number;
    readonly notRunning: number;
  };
  /**
   * What needs attention, which the grid's "only what needs attention" shows: assigned cells not
   * running, and nodes gone or refused by the composition check.
   */
  readonly attention: { readonly cells: number; readonly nodes: number };
  /** How many differences there are, and the first of them by key. */
  readonly differences: {
    readonly total: number;
    readonly first: ReadonlyArray<{ readonly key: string; readonly difference: Difference }>;
  };
  /** After this long without a heartbeat a node is gone (`PRESENCE_GONE_MS`). */
  readonly presenceGoneMs: number;
}

/** `GET /api/grid?from=&count=&filter=&attention=1`: which part of the grid a page shows. */
export interface GridQuery {
  /** The first node shown (of the nodes that match), from 0. */
  readonly from: number;
  /** How many nodes, at most GRID_MAX_NODES. */
  readonly count: number;
  /** A module's name shows its row on every node; a node's name, its column. */
  readonly filter: string;
  /** Only what needs attention. */
  readonly attention: boolean;
}

/** The most nodes one grid page holds. */
export const GRID_MAX_NODES = 200;
/** The most modules one grid page holds. */
export const GRID_MAX_MODULES = 500;

/** One node as a column of the grid (and a row of the nodes table). */
export interface GridColumn {
  readonly node: string;
  readonly state: NodeState;
  readonly presence?: Presence;
  readonly verdict?: CompositionVerdict;
}

/** One module as a row of the grid. */
export interface GridRow {
  readonly module: string;
  /** Where the operator placed it: "on every node", "on a, b", "not assigned". */
  readonly placement: string;
}

/** One (node, module): what is wanted, what runs, how they differ, a pin, and the verdict. */
export interface GridCell {
  readonly want?: Want;
  readonly have?: Have;
  readonly difference?: Difference;
  readonly put?: Put;
  /** Set for a module assigned to the node. */
  readonly verdict?: CellVerdict;
}

/** A page of the grid: its nodes and modules after the filter, and their cells. */
export interface GridPage {
  /** The FleetSummary version it was read at. */
  readonly version: number;
  readonly at: string;
  readonly query: GridQuery;
  readonly totals: { readonly nodes: number; readonly modules: number };
  /** How many nodes and modules match the filter (the columns are a window of the nodes). */
  readonly matched: { readonly nodes: number; readonly modules: number };
  readonly columns: readonly GridColumn[];
  readonly rows: readonly GridRow[];
  /** By `<node>.<module>`; a pair with nothing wanted or reported is absent. */
  readonly cells: Readonly<Record<string, GridCell>>;
}

/** One line of a module's output (`mesh-logs`), with where it was written and its sequence. */
export interface LogEntry {
  readonly seq: number;
  readonly node: string;
  readonly module: string;
  readonly process: string;
  readonly stream: "stdout" | "stderr";
  readonly line: string;
  readonly at: string;
}

/**
 * `GET /api/logs?module=&node=&before=&count=`: a page of lines, oldest first. `before` asks for
 * the page before it; the tail (`GET /api/log-tail?module=&node=&after=`, events named `line`)
 * follows from `last`.
 */
export interface LogPage {
  readonly lines: readonly LogEntry[];
  /** Where the page before this one ends (exclusive). */
  readonly before: number;
  /** Whether older lines may be kept. */
  readonly more: boolean;
  /** The stream's last sequence when the page was read: the tail follows after it. */
  readonly last: number;
}

/** The log tail's event name. */
export const LOG_LINE_EVENT = "line";

/** One kept revision of a cell's have or want, with when it was written. */
export interface Revision<T> {
  readonly revision: number;
  readonly at: string;
  /** Absent for a delete. */
  readonly value?: T;
}

/** `GET /api/history?module=&node=`: what one cell ran and was wanted, over time. */
export interface CellHistory {
  readonly node: string;
  readonly module: string;
  readonly have: ReadonlyArray<Revision<Have>>;
  readonly wants: ReadonlyArray<Revision<Want>>;
  /** The module's conditions on the node as the stream keeps them (the last word of each). */
  readonly conditions: ReadonlyArray<{
    readonly name: string;
    readonly level: string;
    readonly message: string;
    readonly at: string;
    readonly resolved: boolean;
  }>;
}

/** `GET /api/timeline?module=`: when each node took each build of a module. */
export interface ModuleTimeline {
  readonly module: string;
  readonly nodes: ReadonlyArray<{
    readonly node: string;
    readonly builds: ReadonlyArray<{ readonly build: string; readonly at: string }>;
  }>;
  /** How many nodes the timeline leaves out (it shows at most TIMELINE_MAX_NODES). */
  readonly leftOut: number;
  /** How many of its nodes were in each health after each change (every node, oldest first). */
  readonly health: ReadonlyArray<HealthPoint>;
}

/**
 * `GET /api/rollout-canaries`: each rollout's canary nodes (core's canaryOf) by module, and how
 * each runs the build rolled out: its health as its host reports it, or not running it.
 */
export type RolloutCanaries = Record<
  string,
  ReadonlyArray<{ readonly node: string; readonly health: Have["health"] | "not running it" }>
>;

/** The module's nodes by health at one moment. */
export interface HealthPoint {
  readonly at: string;
  readonly healthy: number;
  readonly starting: number;
  readonly failing: number;
  readonly stopped: number;
}

/** The most points a health series holds; a longer one is thinned, its last point kept. */
export const HEALTH_MAX_POINTS = 300;

/** The most nodes a module's timeline shows. */
export const TIMELINE_MAX_NODES = 200;

/**
 * `GET /api/tool-stats?module=&node=&minutes=`: a module's tool calls over the last minutes, on
 * one node or summed over every node, in TOOL_STATS_STEPS equal steps (decision 0172).
 */
export interface ToolStatsSeries {
  readonly module: string;
  readonly node?: string;
  /** The first step's start and the last step's end. */
  readonly from: string;
  readonly to: string;
  readonly stepMs: number;
  /** Every tool called in the time shown, by name. */
  readonly tools: readonly ToolSeries[];
  /** How many of the runtimes' windows were read. */
  readonly windows: number;
  /** True when more windows fell in the time than were read (the newest are shown). */
  readonly truncated: boolean;
}

export interface ToolSeries {
  readonly tool: string;
  /** Calls, and calls answered with an error code, in each step (oldest first). */
  readonly calls: readonly number[];
  readonly errors: readonly number[];
  readonly totalCalls: number;
  readonly totalErrors: number;
  /** The errors by reply code over the whole time. */
  readonly codes: Readonly<Record<string, number>>;
}

export const TOOL_STATS_STEPS = 60;

/** `POST /api/act {action, input}`: what the page can do, each the CLI's own verb. */
export type ActionRequest =
  /** `mesh assign|unassign <module> --node N | --all` (no node: every node). */
  | {
      readonly action: "assign";
      readonly input: { readonly module: string; readonly node?: string; readonly remove: boolean };
    }
  /** `mesh put <module> <build> [--node N]`; without a build, `mesh unput`. */
  | {
      readonly action: "put";
      readonly input: {
        readonly module: string;
        readonly node?: string;
        readonly build?: string;
        readonly why?: string;
      };
    }
  /** `mesh retry <module> [--node N]` */
  | {
      readonly action: "retry";
      readonly input: { readonly module: string; readonly node?: string };
    }
  /** `mesh config set <module> <key> <value> [--node N]` (the value as the CLI reads it: JSON, else a string) */
  | {
      readonly action: "configSet";
      readonly input: {
        readonly module: string;
        readonly key: string;
        readonly value: string;
        readonly node?: string;
      };
    }
  /** `mesh config unset <module> <key> [--node N]` */
  | {
      readonly action: "configUnset";
      readonly input: { readonly module: string; readonly key: string; readonly node?: string };
    }
  /** `mesh secret set <module> <name>`: the value goes to the controller and is never shown again. */
  | {
      readonly action: "secretSet";
      readonly input: { readonly module: string; readonly name: string; readonly value: string };
    }
  /** `mesh module add <git URL | path>` */
  | { readonly action: "register"; readonly input: { readonly spec: string } }
  /** Steering a module's rollout (issue 22): pause, resume, promote, abort or retry it. */
  | {
      readonly action: "rolloutSteer";
      readonly input: {
        readonly module: string;
        readonly steer: RolloutSteerAction;
        /** The rollout of this config key's value (decision 0131), not of a build. */
        readonly config?: string;
      };
    };

/** What an operator may say to a rollout (`ROLLOUT_ACTIONS` in @mesh/protocol). */
export type RolloutSteerAction = "pause" | "resume" | "promote" | "abort" | "retry";

export type ActionName = ActionRequest["action"];

/** What `POST /api/act` answers: the CLI's line and its JSON, or the coded refusal. */
export type ActionResult =
  | {
      readonly ok: true;
      readonly message: string;
      readonly result?: Readonly<Record<string, unknown>>;
    }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

/**
 * What a session may do: `operate` acts with the operator's grant, `read` with a grant that
 * writes nothing (the bus refuses its actions, not only the page).
 */
export type Access = "operate" | "read";

/** `GET /api/session`: who the page acts as, and the token its POSTs carry. */
export interface SessionInfo {
  readonly who: string;
  readonly access: Access;
  /** Sent back as {@link SESSION_CSRF_HEADER} with every POST; empty without logins. */
  readonly csrf: string;
  /** Whether the view asks for a login (it listens beyond loopback). */
  readonly login: boolean;
}

/** The header a session's POSTs carry its CSRF token in. */
export const SESSION_CSRF_HEADER = "x-mesh-view-csrf";

/** Where the page ends its session (a view with logins): `POST /logout`. */
export const LOGOUT_PATH = "/logout";
