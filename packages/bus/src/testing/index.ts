/**
 * `@mesh/bus/testing`: what tests of every package use to get a real bus, wait for what it does,
 * and set up what only the controller would (buckets, raw records).
 */
export {
  ADMIN_USER,
  PROMPT_MS,
  credentialFor,
  deadline,
  freePort,
  startTestServer,
  stretched,
  type TestServer,
  type TestServerOptions,
  type TestUser,
} from "./harness.js";
export { maySubscribe } from "./probe.js";
export { reapNetnsWithMe, reapWithMe, reaperPid, type ReapOptions } from "./reaper.js";
export { waitFor, type WaitForOptions } from "./wait-for.js";
export { firstPut, recordWrites } from "./first-put.js";
export { startHoldingParent, type HoldingParent } from "./holding-parent.js";
export { hasCode } from "./has-code.js";
export { processesNaming, procStatFields, startTimeOf } from "./proc-stat.js";
export { rawTar, rawTarStream, type RawEntry } from "./raw-tar.js";
export { serveEchoOnRacks } from "./echo-racks.js";
export { startCuttableLink, type CuttableLink } from "./cuttable-link.js";
export { createBucket, destroyBucket, forgeDelivery, publishRaw } from "./buckets.js";
export {
  readStockContext,
  stockSession,
  type StockContext,
  type StockSession,
} from "./stock-client.js";
export { startTestCluster, type TestCluster, type TestClusterOptions } from "./cluster.js";
export {
  startAccountsTestServer,
  type AccountsTestServer,
  type SignedLogin,
} from "./accounts-harness.js";
export { standIn } from "./stand-in.js";
export {
  accountsSuite,
  busSuite,
  refusesLogin,
  scratchFolders,
  withTempDir,
  type AccountsSuite,
  type BusSuite,
} from "./fixtures.js";
