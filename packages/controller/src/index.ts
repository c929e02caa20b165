/**
 * `@mesh/controller`: the controller daemon (composition, the broker of credentials, sealing,
 * joins and secrets) and the asks other processes make of it. Its test fixture is
 * `@mesh/controller/testing`.
 */
export { BROKER_USERS_FILE, Broker, PrincipalKind, serverUsersOnDisk } from "./broker.js";
export { Vault } from "./vault.js";
export { Controller, type ControllerOptions, type PassReport } from "./controller.js";
export {
  ConditionResolve,
  JoinToken,
  McpCredential,
  MAX_SECRET_BYTES,
  SecretList,
  SecretSet,
  SecretUnset,
  ViewCredential,
  askConditionResolve,
  askJoinToken,
  askMcpCredential,
  askViewCredential,
  askSecretList,
  askSecretSet,
  askSecretUnset,
  type AnswerOf,
} from "./controller-api.js";
export { Fleet } from "./fleet.js";
export { planNode, type NodePlan, type NodeRefusal, type PlanContext } from "./node-plan.js";
export { previewComposition } from "./compose-preview.js";
export { runControllerDaemon, runControllerProcess, type DaemonOptions } from "./daemon.js";
