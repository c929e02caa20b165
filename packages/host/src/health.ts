/**
 * A module's health from what the host knows of it (DESIGN.md "The host"): pure, so the rule is
 * tested as a table.
 *
 * - `failing`: its last apply failed (bad digest, refused archive, missing bundle, a need that
 *   could not be written), or one of its processes exited `failingExits` times within the window;
 * - `healthy`: every process has run at least `healthyMs` (a module with no process: applied);
 * - `starting`: otherwise;
 * - `stopped`: it is no longer composed here (decided by the caller).
 */
import type { Health } from "@mesh/protocol";

export interface HealthRules {
  readonly healthyMs: number;
  readonly failingExits: number;
  readonly windowMs: number;
}

export const DEFAULT_HEALTH_RULES: HealthRules = {
  healthyMs: 10_000,
  failingExits: 3,
  windowMs: 5 * 60_000,
};

export interface ProcessFacts {
  readonly running: boolean;
  readonly since: number | undefined;
  readonly exits: readonly number[];
  readonly lastError: string | undefined;
}

export function moduleHealth(input: {
  readonly applyError: string | undefined;
  readonly processes: readonly ProcessFacts[];
  readonly now: number;
  readonly rules: HealthRules;
}): { health: Health; lastError: string | undefined } {
  const { applyError, processes, now, rules } = input;
  if (applyError !== undefined) return { health: "failing", lastError: applyError };
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
