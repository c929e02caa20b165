/**
 * Regression (issue 27, item 1): the host's bus side waited between attempts to open the
 * artifact store, mesh-have and the provision service on a promise that added an abort listener
 * to the host's stop signal and never removed it when the wait ended. A host whose bus had no
 * JetStream gained one listener per retry, and Node's MaxListenersExceededWarning appeared at
 * the eleventh, under two minutes into such an outage. The waits are now the kit's `delay`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { rm } from "node:fs/promises";
import { generateNodeKeys } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Principal } from "@mesh/protocol";
import { startBusWithoutJetStream } from "./bus-without-jetstream.js";
import { Connection } from "./connection.js";
import { Host } from "./host.js";
import { Provisioner } from "./provisioner.js";
import { HOST_PASSWORD, credentialFor, tempRoot, waitFor } from "./test-support.js";

const NODE = "t1";
const RETRIES = 100;
/** As quick as a backoff may be, so a hundred retries take a moment. */
const QUICK = { initialMs: 1, maxMs: 2, jitter: 0 } as const;
const hostCredential = (url: string) =>
  credentialFor(
    { url },
    { user: `host-${NODE}`, password: HOST_PASSWORD },
    { node: NODE, module: Principal.host },
  );
const isRetry = (line: string): boolean => /cannot use the bus yet/.test(line);

/** Every process warning said while `body` runs. */
async function warningsDuring(body: () => Promise<void>): Promise<Error[]> {
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning);
  process.on("warning", onWarning);
  try {
    await body();
    // A warning is said on the tick after the listener that crossed the limit.
    await new Promise<void>((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", onWarning);
  }
  return warnings;
}

test("a host retrying against a bus without JetStream for 100 retries emits no MaxListenersExceededWarning", async () => {
  await using plain = await startBusWithoutJetStream(NODE, await freePort());
  const root = await tempRoot();
  const logged: string[] = [];
  const host = await Host.create({
    node: NODE,
    root,
    credential: hostCredential(plain.url),
    busBackoff: QUICK,
    log: (line) => logged.push(line),
  });
  try {
    const warnings = await warningsDuring(async () => {
      const running = host.run({ signal: new AbortController().signal });
      try {
        await waitFor(
          `${RETRIES} retries of the bus side`,
          () => logged.filter(isRetry).length >= RETRIES,
          60_000,
        );
      } finally {
        await host.stop();
        await running;
      }
    });
    assert.deepEqual(
      warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message),
      [],
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("the host's bus side holds a constant number of abort listeners through 100 retries", async () => {
  await using plain = await startBusWithoutJetStream(NODE, await freePort());
  const root = await tempRoot();
  const stop = new AbortController();
  const counts: number[] = [];
  const connection = new Connection({
    node: NODE,
    root,
    keys: generateNodeKeys(),
    provisioner: new Provisioner({ node: NODE, servers: [plain.url], onChanged: () => undefined }),
    openBackoff: QUICK,
    onConnected: () => Promise.resolve(),
    onReconnected: () => undefined,
    signal: stop.signal,
    // Counted when a retry is said: between attempts, when nothing of an attempt is left.
    log: (line) => {
      if (isRetry(line)) counts.push(getEventListeners(stop.signal, "abort").length);
    },
  });
  const connecting = connection.connect(hostCredential(plain.url));
  try {
    await waitFor(`${RETRIES} retries`, () => counts.length >= RETRIES, 60_000);
  } finally {
    stop.abort();
    await connecting;
    await connection.close();
    await rm(root, { recursive: true, force: true });
  }
  const first = counts[0];
  assert.ok(first !== undefined);
  assert.deepEqual(
    counts.slice(0, RETRIES).filter((n) => n !== first),
    [],
    `the listeners on the stop signal at each retry: ${counts.slice(0, 20).join(", ")}, …`,
  );
});
