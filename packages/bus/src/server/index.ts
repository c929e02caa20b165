/**
 * `@mesh/bus/server`: administering a nats-server rather than speaking to one — finding the
 * binary, writing its config, starting it as a child, reloading its users, the accounts mode's
 * keys, JWTs and revocations, and the self-signed certificate `mesh up --listen` serves. Only
 * `mesh up`, the controller and tests need it; a process that only talks on the bus imports
 * `@mesh/bus`.
 */
export { findServer, type FindServerOptions, type NatsServerBinary } from "./find-server.js";
export {
  FULL_PERMISSIONS,
  hashPassword,
  renderServerConfig,
  verifyPassword,
  type ServerCluster,
  type ServerConfigOptions,
  type ServerTls,
  type ServerUser,
} from "./server-config.js";
export { EmbeddedServer, ServerFiles, type EmbeddedServerOptions } from "./embedded-server.js";
export type { ServerExit } from "./server-output.js";
export {
  reloadServerUsers,
  serverFolderSink,
  serverFolders,
  type ReloadOutcome,
  type ReloadServerUsersOptions,
  type UsersSink,
} from "./reload-users.js";
export {
  AccountKeys,
  MESH_ACCOUNT_NAME,
  SYSTEM_USER,
  ensureAccountKeys,
  formatCreds,
  isCurrentUserJwt,
  issueUserJwt,
  jwtIssuedAt,
  makeAccountKeys,
  meshAccountJwt,
  newUserKey,
  publicKeyOf,
  readAccountKeys,
  serverAccounts,
  systemUser,
  userPermissionClaims,
  writeSecretJson,
  type Revocations,
  type ServerAccounts,
} from "./accounts.js";
export {
  REVOCATION_PRUNE_MARGIN_S,
  addRevocation,
  pruneRevocations,
  readRevocationList,
  readRevocations,
  type RevocationList,
} from "./revocations.js";
export {
  AccountAuthority,
  AccountFiles,
  pushAccountJwt,
  type AccountAuthorityOptions,
} from "./account-authority.js";
export { keepNextAccountJwt, readKeptAccountJwt } from "./account-jwt.js";
export { AuthMode, type ServerAccountsConfig } from "./server-config.js";
export { type ServerBase } from "./embedded-server.js";
export { readServerBase } from "./reload-users.js";
export {
  certificateFingerprint,
  keyMatches,
  makeSelfSigned,
  type SelfSigned,
  type SelfSignedOptions,
} from "./self-signed.js";
