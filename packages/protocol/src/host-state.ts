/**
 * The host's saved state (`<root>/state/applied.json`): what it applied, so a host that starts
 * again finds its bundles, need files and processes (pid and start time) and the composition it
 * last ran. Local to a node, never on the bus; parsed with this schema before a pid in it is
 * signalled or adopted. Fields an older host wrote and this one no longer reads are dropped.
 */
import { z } from "zod";
import { Composed } from "./values.js";

const Text = z.string().min(1);

/** A bundle unpacked at a path. */
export const AppliedDelivery = z.object({ module: Text, digest: Text });
export type AppliedDelivery = z.infer<typeof AppliedDelivery>;

/** A need file the host wrote. */
export const AppliedNeed = z.object({ module: Text, path: Text, fingerprint: Text });
export type AppliedNeed = z.infer<typeof AppliedNeed>;

/** A process the host started, and the fingerprint of everything it was started from. */
export const AppliedProcess = z.object({
  module: Text,
  name: Text,
  /** Changes when the process must restart: its resource, a restart-on resource, its config. */
  effective: Text,
  /** Absent between deciding to start it and the spawn (a crash there leaves no pid). */
  pid: z.number().int().positive().optional(),
  startTime: Text.optional(),
});
export type AppliedProcess = z.infer<typeof AppliedProcess>;

export const AppliedState = z.object({
  version: z.literal(1),
  /** The last composition received from the bus. */
  composed: Composed.optional(),
  /**
   * mesh-config as last seen, so a host that starts without the bus tells its processes the
   * same values (and does not restart the ones that restart on config for nothing).
   */
  config: z.record(z.string(), z.unknown()).default({}),
  /** By bundle path. */
  deliveries: z.record(z.string(), AppliedDelivery).default({}),
  /** By resource id. */
  needs: z.record(z.string(), AppliedNeed).default({}),
  /** By resource id. */
  processes: z.record(z.string(), AppliedProcess).default({}),
});
export type AppliedState = z.infer<typeof AppliedState>;
