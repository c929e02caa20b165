/**
 * `@mesh/bus/internal`: what sibling packages' internals and tests may need but the public entry
 * does not offer — the raw NATS handles of a connection. Prefer the helpers of `@mesh/bus` and
 * `@mesh/bus/testing`; a use of this entry outside tests is a helper missing from `@mesh/bus`.
 */
export { natsOf, type NatsHandles } from "./mesh-bus.js";
