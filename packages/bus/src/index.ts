export * from "./bus-errors.js";
export * from "./credential-file.js";
export * from "./mesh-bus.js";
export * from "./kv-bucket.js";
export * from "./services.js";
export * from "./say.js";
export * from "./artifacts.js";
export * from "./layout-setup.js";
export * from "./server/find-server.js";
export * from "./server/server-config.js";
export * from "./server/embedded-server.js";
export * from "./sealing.js";
export * from "./publish.js";
export * from "./server/reload-users.js";
export * from "./server/accounts.js";
export * from "./server/account-authority.js";
export * from "./join-client.js";
export * from "./stream-reader.js";
export * from "./tool-discovery.js";
export * from "./kit/index.js";
export * from "./mirror/index.js";
export { WATCH_STALL_MS } from "./kv-watch.js";
export {
  MAX_REPLICAS,
  streamPlacement,
  waitForJetStream,
  withAllowedReplicas,
  type StreamPlacement,
} from "./replicas.js";
export * from "./tls-pin.js";
export * from "./server/self-signed.js";
