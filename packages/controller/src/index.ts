/**
 * `@mesh/controller`: the controller daemon (composition, the broker of credentials, sealing,
 * joins and secrets) and the asks other processes make of it. Its test fixture is
 * `@mesh/controller/testing`.
 */
export { BROKER_USERS_FILE, Broker, PrincipalKind, serverUsersOnDisk } from "./broker.js";
export { Vault } from "./vault.js";
export { Controller, type ControllerOptions, type PassReport } from "./controller.js";
export {
  ConditionResolveAnswer,
  ConditionResolveAsk,
  JoinTokenAnswer,
  JoinTokenAsk,
  McpCredentialAnswer,
  McpCredentialAsk,
  MAX_SECRET_BYTES,
  SecretSetAnswer,
  SecretSetAsk,
  askConditionResolve,
  askJoinToken,
  askMcpCredential,
  askViewCredential,
  ViewCredentialAnswer,
  ViewCredentialAsk,
  askSecretList,
  askSecretSet,
  askSecretUnset,
} from "./controller-api.js";
export { Fleet } from "./fleet.js";
export { planNode, type NodePlan, type NodeRefusal, type PlanContext } from "./node-plan.js";
export { previewComposition } from "./compose-preview.js";
export { runControllerDaemon, runControllerProcess, type DaemonOptions } from "./daemon.js";
