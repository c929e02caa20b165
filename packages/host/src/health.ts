/**
 * A module's health from what the host knows of it (docs/design.md "The host"): pure, so the
 * rule is tested as a table.
 *
 * - `failing`: its last apply failed (bad digest, refused archive, missing bundle, a need that
 *   could not be written), one of its processes exited `failingExits` times within the window,
 *   or the runtime says its tools fail to load (a throw at load, a crash, a hang);
 * - `healthy`: every process has run at least `healthyMs` (a module with no process: applied),
 *   and, for a module whose tools the runtime serves, the runtime says they loaded (serving, or
 *   idle: loaded before, its worker stopped until the next call);
 * - `starting`: otherwise;
 * - `stopped`: it is no longer composed here (decided by the caller).
 */
import type { Health } from "@mesh/protocol";

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
  readonly exits: readonly number[];
  readonly lastError: string | undefined;
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
  readonly applyError: string | undefined;
  /** What the module waits for before it can start (a secret not set yet): starting, not failing. */
  readonly waitingFor?: { readonly what: string } | undefined;
  readonly processes: readonly ProcessFacts[];
  readonly now: number;
  readonly rules: HealthRules;
  /** For a module whose tools the runtime serves here: what it said of them. */
  readonly tools?: ToolsFacts | undefined;
}): { health: Health; lastError: string | undefined } {
  const { applyError, processes, now, rules } = input;
  if (applyError !== undefined) return { health: "failing", lastError: applyError };
  if (input.waitingFor !== undefined) return { health: "starting", lastError: undefined };
  // A tools module is healthy once its tools load, failing when the runtime says they do not.
  if ("tools" in input) {
    const tools = input.tools;
    if (tools?.state === "failing") {
      return { health: "failing", lastError: tools.error ?? "its tools failed to load" };
    }
    if (tools?.state !== "serving" && tools?.state !== "idle") {
      const own = moduleHealth({ applyError, processes, now, rules });
      return {
        health: own.health === "failing" ? "failing" : "starting",
        lastError: own.lastError,
      };
    }
  }
  const ranHealthy = (p: ProcessFacts): boolean =>
    p.running && p.since !== undefined && now - p.since >= rules.healthyMs;
  // Exits in the window make it failing until a run lasts the healthy time again.
  const failing = processes.find(
    (p) =>
      !ranHealthy(p) &&
      p.exits.filter((t) => now - t <= rules.windowMs).length >= rules.failingExits,
  );
  if (failing !== undefined) return { health: "failing", lastError: failing.lastError };
  const lastError = processes.find((p) => p.lastError !== undefined)?.lastError;
  const healthy = processes.every(ranHealthy);
  return { health: healthy ? "healthy" : "starting", lastError };
}
