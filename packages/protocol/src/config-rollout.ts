/**
 * The buckets of config rollouts (issue 22 item 4, decision 0131): an operator's value for a
 * module's config key that moves through the module's waves, and the assigner's record of how far
 * it went. The value reaches a node as that node's own value (`<module>.<key>.<node>` in
 * mesh-config), written by the assigner wave by wave; once every wave held it becomes the
 * mesh-wide value.
 */
import { z } from "zod";
import { WAVE_FIELDS } from "./rollout.js";
import { Actor, Instant, Name, SET_VALUE_FIELDS } from "./values.js";

/** The words an operator may say to a config rollout (a retry is a new `--rollout` of the value). */
export const CONFIG_ROLLOUT_ACTIONS = ["pause", "resume", "promote", "abort"] as const;
export const ConfigRolloutAction = z.enum(CONFIG_ROLLOUT_ACTIONS);
export type ConfigRolloutAction = z.infer<typeof ConfigRolloutAction>;

/**
 * mesh-config-rollouts `<module>.<key>`: the value an operator moves through the waves. `at`
 * names the request: a new `mesh config set … --rollout` is a new rollout, and `steer` (the
 * operator's last word on it) is dropped with the request it was said to.
 */
export const ConfigRolloutRequest = z
  .object({
    ...SET_VALUE_FIELDS,
    steer: z.object({ action: ConfigRolloutAction, by: Actor, at: Instant }).strict().optional(),
  })
  .strict();
export type ConfigRolloutRequest = z.infer<typeof ConfigRolloutRequest>;

/**
 * mesh-config-waves `<module>.<key>`: the assigner's record of a config value's rollout. Like a
 * build's (mesh-rollouts), it changes only at a step, never with a report.
 */
export const ConfigRollout = z
  .object({
    module: Name,
    key: Name,
    value: z.json(),
    /** The fingerprint of the value, as the hosts report it in `have.config`. */
    fingerprint: z.string().min(1),
    /** The request's `at`: which request this record is of. */
    request: Instant,
    by: Actor,
    ...WAVE_FIELDS,
    failed: z
      .object({
        reason: z.string().min(1),
        nodes: z.array(z.object({ node: Name, error: z.string() }).strict()),
      })
      .strict()
      .optional(),
  })
  .strict();
export type ConfigRollout = z.infer<typeof ConfigRollout>;
