/**
 * `@mesh/bus`: the only package that speaks NATS — credentials, connections, KV, object store and
 * service helpers, the embedded nats-server. The daemon kit (lifecycle, signal stop, backoff,
 * atomic write) is `@mesh/kit`. The raw NATS handles are in `@mesh/bus/internal`, the test harness in
 * `@mesh/bus/testing`.
 */
export { isBusTrouble, isTransient } from "./bus-errors.js";
export { credentialInbox, readCredential, writeCredential } from "./credential-file.js";
export {
  MeshBus,
  type BusEvent,
  type BusMessage,
  type ConnectOptions,
  type SubscribeOptions,
} from "./mesh-bus.js";
export {
  KvBucket,
  type CallOptions,
  type Entry,
  type WatchEvent,
  type WatchOptions,
} from "./kv-bucket.js";
export {
  request,
  serve,
  type EndpointSpec,
  type Request,
  type RequestOptions,
  type ServeOptions,
  type Served,
} from "./services.js";
export { keepSayingKeeps, sayCondition, type KeptState, type SayCondition } from "./say.js";
export { ArtifactStore, sha256, type ArtifactInfo } from "./artifacts.js";
export {
  ensureLayout,
  ensureStateBucket,
  type LayoutOptions,
  type LayoutReport,
} from "./layout-setup.js";
export { findServer, type FindServerOptions, type NatsServerBinary } from "./server/find-server.js";
export {
  FULL_PERMISSIONS,
  hashPassword,
  renderServerConfig,
  verifyPassword,
  type ServerCluster,
  type ServerConfigOptions,
  type ServerTls,
  type ServerUser,
} from "./server/server-config.js";
export {
  EmbeddedServer,
  ServerFiles,
  type EmbeddedServerOptions,
} from "./server/embedded-server.js";
export type { ServerExit } from "./server/server-output.js";
export { generateNodeKeys, loadOrCreateNodeKeys, seal, unseal, type NodeKeys } from "./sealing.js";
export { flush, publish, type PublishOptions } from "./publish.js";
export {
  reloadServerUsers,
  serverFolderSink,
  serverFolders,
  type ReloadOutcome,
  type ReloadServerUsersOptions,
  type UsersSink,
} from "./server/reload-users.js";
export { requestJoin, type JoinOptions } from "./join-client.js";
export {
  readStream,
  streamBounds,
  type StreamEvent,
  type StreamReadOptions,
} from "./stream-reader.js";
export { discoverTools, type DiscoverOptions, type DiscoveredTool } from "./tool-discovery.js";
export {
  ALL,
  Mirror,
  type Dirty,
  type Kept,
  type MirrorChange,
  type MirrorOptions,
  type MirrorSource,
  type Sources,
  type Touched,
  type Watchable,
} from "./mirror/mirror.js";
export {
  conditionsSource,
  openedOnWatch,
  readStanding,
  skippingInvalid,
  streamSource,
  type StreamSourceOptions,
} from "./mirror/sources.js";
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
} from "./server/accounts.js";
export {
  REVOCATION_PRUNE_MARGIN_S,
  addRevocation,
  pruneRevocations,
  readRevocationList,
  readRevocations,
  type RevocationList,
} from "./server/revocations.js";
export {
  AccountAuthority,
  AccountFiles,
  pushAccountJwt,
  type AccountAuthorityOptions,
} from "./server/account-authority.js";
export { AuthMode, type ServerAccountsConfig } from "./server/server-config.js";
export { type ServerBase } from "./server/embedded-server.js";
export { readServerBase } from "./server/reload-users.js";
export { WATCH_STALL_MS } from "./kv-watch.js";
export {
  MAX_REPLICAS,
  streamPlacement,
  waitForJetStream,
  withAllowedReplicas,
  type StreamPlacement,
} from "./replicas.js";
export { busAddress, fetchPinnedCertificate, type FetchPinnedOptions } from "./tls-pin.js";
export {
  certificateFingerprint,
  keyMatches,
  makeSelfSigned,
  type SelfSigned,
  type SelfSignedOptions,
} from "./server/self-signed.js";
