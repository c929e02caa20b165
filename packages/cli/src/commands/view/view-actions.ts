/**
 * The CLI's own verbs as the view's page does them (`ViewActions`): each is the function the
 * verb itself calls, on the view's bus, so the page and the terminal cannot drift apart.
 */
import { parseConfigKey } from "@mesh/protocol";
import type { ViewActions } from "@mesh/view";
import { assign, put } from "../module/assign.js";
import { configValues, declaredConfig, setConfig, unsetConfig } from "../config/config.js";
import { addModule } from "../module/module.js";
import { retry } from "../module/retry.js";
import { steerRollout } from "../rollout/rollout-steer.js";
import { steerConfigRollout } from "../rollout/config-rollout-steer.js";
import { setSecret } from "../secret/secret.js";

export const viewActions: ViewActions = {
  assign: (bus, { module, node, remove }) =>
    assign(bus, { module, target: node === undefined ? { all: true } : { node }, remove }),
  put: (bus, input) => put(bus, input),
  retry: (bus, input) => retry(bus, input),
  configSet: (bus, input) => setConfig(bus, input),
  configUnset: (bus, input) => unsetConfig(bus, input),
  secretSet: async (bus, input) => {
    const { message, notes, result } = await setSecret(bus, input);
    return { message: [message, ...notes].join("; "), result };
  },
  rolloutSteer: (bus, { config, ...input }) =>
    config === undefined
      ? steerRollout(bus, input)
      : steerConfigRollout(bus, { module: input.module, key: config, steer: input.steer }),
  register: async (bus, { spec }) => {
    const { message, registration } = await addModule(bus, spec);
    return { message, result: { module: registration.module, source: registration.source } };
  },
  configKeys: async (bus, module) => {
    const values: Record<string, unknown> = {};
    for (const [k, v] of await configValues(bus, module)) {
      const parsed = parseConfigKey(k);
      if (parsed.module !== module) continue;
      values[parsed.node === undefined ? parsed.key : `${parsed.key}.${parsed.node}`] = v.value;
    }
    return { declared: await declaredConfig(bus, module), values };
  },
};
