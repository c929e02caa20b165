/**
 * `@mesh/bus`: the only package that speaks NATS — the client: credentials, connections, KV,
 * object store, services, streams, the bucket mirror. Administering a server (the embedded
 * nats-server, its config and reloads, accounts, revocations, self-signed certificates) is
 * `@mesh/bus/server`; the daemon kit is `@mesh/kit`. The raw NATS handles are in
 * `@mesh/bus/internal`, the test harness in `@mesh/bus/testing`.
 */
export { isBusTrouble, isTransient } from "./bus-errors.js";
export type {
  BusEvent,
  ConnectionListener,
  ConnectionState,
  ConnectionStatus,
} from "./connection-state.js";
export { credentialInbox, readCredential, writeCredential } from "./credential-file.js";
export {
  MeshBus,
  type BusMessage,
  type ConnectOptions,
  type SubscribeOptions,
} from "./mesh-bus.js";
export {
  KvBucket,
  type CallOptions,
  type OpenOptions,
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
export {
  generateNodeKeys,
  loadOrCreateNodeKeys,
  publicKeyProblem,
  seal,
  unseal,
  type NodeKeys,
} from "./sealing.js";
export { flush, publish, type PublishOptions } from "./publish.js";
export { requestJoin, type JoinOptions } from "./join-client.js";
export {
  readStream,
  streamBounds,
  type StreamEvent,
  type StreamReadOptions,
} from "./stream-reader.js";
export { discoverTools, type DiscoverOptions, type DiscoveredTool } from "./tool-discovery.js";
export {
  Mirror,
  type Kept,
  type MirrorChange,
  type MirrorOptions,
  type MirrorSource,
  type SourceChange,
  type Sources,
  type Watchable,
} from "./mirror/mirror.js";
export {
  reconciler,
  type ReconcileBurstContext,
  type ReconcileContext,
  type Reconciled,
  type Reconciler,
  type ReconcilerOptions,
} from "./mirror/reconciler.js";
export {
  conditionsSource,
  openedOnWatch,
  readStanding,
  skippingInvalid,
  streamSource,
  type StreamSourceOptions,
} from "./mirror/sources.js";
export { WATCH_STALL_MS } from "./kv-watch.js";
export { listNodes, readModuleWide, readNodeKeys, readSummary } from "./fleet-reads.js";
export {
  MAX_REPLICAS,
  streamPlacement,
  waitForJetStream,
  withAllowedReplicas,
  type StreamPlacement,
} from "./replicas.js";
export { busAddress, fetchPinnedCertificate, type FetchPinnedOptions } from "./tls-pin.js";
