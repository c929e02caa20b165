/**
 * A module's health from what the host knows of it (docs/design.md "The host"): pure, so the
 * rule is tested as a table.
 *
 * - `failing`: its last apply failed (bad digest, refused archive, missing bundle, a need that
 *   could not be written), one of its processes exited `failingExits` times within the window
 *   or in a row without a run lasting `healthyMs`, or the runtime says its tools fail to load
 *   (a throw at load, a crash, a hang);
 * - `healthy`: every process has run at least `healthyMs` (a module with no process: applied),
 *   and, for a module whose tools the runtime serves, the runtime says they loaded (serving, or
 *   idle: loaded before, its worker stopped until the next call);
 * - `starting`: otherwise;
 * - `stopped`: it is no longer composed here (decided by the caller).
 *
 * Whatever the health, a process exiting in a row is said as a crash loop (`exits`): between
 * its restarts a module is not simply starting.
 */
import { ErrorCode, type Health } from "@mesh/protocol";

/** Why a module fails: a code of the one closed table, which is decided on, and its words. */
export interface Reason {
  readonly code: ErrorCode;
  readonly message: string;
}

export interface HealthRules {
  readonly healthyMs: number;
  readonly failingExits: number;
  readonly windowMs: number;
  /** How long the runtime may be away from the bus (the host reaching it) before its modules fail. */
  readonly unreachableMs: number;
}

export const DEFAULT_HEALTH_RULES: HealthRules = {
  healthyMs: 10_000,
  failingExits: 3,
  windowMs: 5 * 60_000,
  unreachableMs: 10_000,
};

/**
 * Why the runtime's modules are failing because it cannot reach the bus, or undefined: its status
 * says it has been disconnected for more than `unreachableMs` while the host itself reaches the
 * bus (when neither does, the bus is down, which is not the runtime's fault; what runs keeps
 * running).
 */
export function runtimeUnreachable(input: {
  readonly bus: { readonly connected: boolean; readonly since: string } | undefined;
  readonly hostConnected: boolean;
  readonly now: number;
  readonly rules: Pick<HealthRules, "unreachableMs">;
}): string | undefined {
  const { bus, hostConnected, now, rules } = input;
  if (bus === undefined || bus.connected || !hostConnected) return undefined;
  const since = Date.parse(bus.since);
  if (!Number.isFinite(since) || now - since <= rules.unreachableMs) return undefined;
  return `node-tools cannot reach the bus since ${bus.since} (the host can): it serves nothing; read its log (\`mesh logs node-tools\`), and restart it if it does not reconnect by itself`;
}

export interface ProcessFacts {
  readonly running: boolean;
  readonly since: number | undefined;
  /** When each recent exit happened. */
  readonly exits: readonly number[];
  /** Exits in a row since a run last lasted the healthy time (absent: none counted). */
  readonly exitsInARow?: number;
  /** Why it last exited (the supervisor's words). */
  readonly lastError: string | undefined;
}

/** A crash loop as the have says it: exits in a row, and when the last one was. */
export interface CrashLoop {
  readonly inARow: number;
  readonly last: number;
}

/**
 * What the runtime said of a module's tools: its load result (undefined: not reported yet).
 * `idle`: it loaded and served, and its worker is stopped until its next call; healthy.
 */
export interface ToolsFacts {
  readonly state: "starting" | "serving" | "idle" | "failing" | "stopped";
  readonly error?: string;
}

export function moduleHealth(input: {
  readonly applyError: Reason | undefined;
  /** What the module waits for before it can start (a secret not set yet): starting, not failing. */
  readonly waitingFor?: { readonly what: string } | undefined;
  readonly processes: readonly ProcessFacts[];
  readonly now: number;
  readonly rules: HealthRules;
  /** For a module whose tools the runtime serves here: what it said of them. */
  readonly tools?: ToolsFacts | undefined;
}): ModuleHealth {
  const { applyError, processes, now, rules } = input;
  if (applyError !== undefined) return { health: "failing", lastError: applyError };
  if (input.waitingFor !== undefined) return { health: "starting", lastError: undefined };
  const exits = crashLoop(processes, now, rules);
  const health = ownHealth(input);
  return exits === undefined ? health : { ...health, exits };
}

export interface ModuleHealth {
  readonly health: Health;
  readonly lastError: Reason | undefined;
  /** Set while a process exits again and again without a run lasting the healthy time. */
  readonly exits?: CrashLoop;
}

/**
 * The crash loop of a module's processes: the most exits in a row of one process that has not
 * run healthy since, and the latest exit among them; undefined when none has exited in a row.
 */
export function crashLoop(
  processes: readonly ProcessFacts[],
  now: number,
  rules: Pick<HealthRules, "healthyMs">,
): CrashLoop | undefined {
  let found: CrashLoop | undefined;
  for (const p of processes) {
    const inARow = p.exitsInARow ?? 0;
    const last = p.exits.length === 0 ? undefined : Math.max(...p.exits);
    if (inARow === 0 || last === undefined || ranHealthy(p, now, rules)) continue;
    found = {
      inARow: Math.max(inARow, found?.inARow ?? 0),
      last: Math.max(last, found?.last ?? 0),
    };
  }
  return found;
}

const ranHealthy = (p: ProcessFacts, now: number, rules: Pick<HealthRules, "healthyMs">) =>
  p.running && p.since !== undefined && now - p.since >= rules.healthyMs;

function ownHealth(input: {
  readonly applyError: Reason | undefined;
  readonly processes: readonly ProcessFacts[];
  readonly now: number;
  readonly rules: HealthRules;
  readonly tools?: ToolsFacts | undefined;
}): { health: Health; lastError: Reason | undefined } {
  const { applyError, processes, now, rules } = input;
  // A tools module is healthy once its tools load, failing when the runtime says they do not.
  if ("tools" in input) {
    const tools = input.tools;
    if (tools?.state === "failing") {
      const message = tools.error ?? "its tools failed to load";
      return { health: "failing", lastError: { code: ErrorCode.TOOLS_FAILED, message } };
    }
    if (tools?.state !== "serving" && tools?.state !== "idle") {
      const own = ownHealth({ applyError, processes, now, rules });
      return {
        health: own.health === "failing" ? "failing" : "starting",
        lastError: own.lastError,
      };
    }
  }
  // Exits in the window, or in a row (a backoff grown past the window spaces them out), make
  // it failing until a run lasts the healthy time again.
  const failing = processes.find(
    (p) =>
      !ranHealthy(p, now, rules) &&
      ((p.exitsInARow ?? 0) >= rules.failingExits ||
        p.exits.filter((t) => now - t <= rules.windowMs).length >= rules.failingExits),
  );
  if (failing !== undefined) return { health: "failing", lastError: exited(failing.lastError) };
  const lastError = exited(processes.find((p) => p.lastError !== undefined)?.lastError);
  const healthy = processes.every((p) => ranHealthy(p, now, rules));
  return { health: healthy ? "healthy" : "starting", lastError };
}

const exited = (message: string | undefined): Reason | undefined =>
  message === undefined ? undefined : { code: ErrorCode.PROCESS_EXITED, message };
