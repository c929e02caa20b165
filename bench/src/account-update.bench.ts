/**
 * What an account update costs the server as the account's connections grow (issue 23.4): the
 * mesh account's JWT pushed with 1,000 revocations (`AccountAuthority.push`, the controller's
 * own call) on a real nats-server in accounts mode, with 0 connections of the account and then
 * more, each a host's signed credential connected as a host connects. The baseline is the same
 * update with no connection of the account, in the same run. The server checks every connection
 * of the account against the new JWT; what this measures is how that grows.
 *
 *   npm run build && npm run bench -- account-update
 *
 * BENCH_UPDATE_CONNECTIONS: the connection counts, comma-separated (default 0,1000,2000,4000).
 */
import { MeshBus } from "@mesh/bus";
import { startAccountsTestServer } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import type { Credential } from "@mesh/protocol";
import { line, quantile, timeEach } from "./measure.js";

const COUNTS = (process.env["BENCH_UPDATE_CONNECTIONS"] ?? "0,1000,2000,4000")
  .split(",")
  .map(Number);
const REVOKED = 1_000;
const ROUNDS = 5;
/** Connections opened at once: a fleet joining, not a stampede. */
const AT_ONCE = 10;

async function main(): Promise<void> {
  const server = await startAccountsTestServer();
  const clients: MeshBus[] = [];
  try {
    const host = await server.issue("n0.host", hostGrant({ node: "n0" }));
    // The kept list an update carries: 1,000 revocations, as after a minute of joins.
    const revocations: Record<string, number> = {};
    for (let i = 0; i < REVOKED; i++) {
      const gone = await server.issue(`gone${i}`, hostGrant({ node: `g${i}` }));
      revocations[gone.publicKey] = Math.floor(Date.now() / 1000);
    }
    await server.authority.record(revocations);
    const credential: Credential = {
      servers: [server.url],
      user: host.user,
      jwt: host.jwt,
      seed: host.seed,
      node: "n0",
      module: "host",
    };
    let base: number | undefined;
    for (const count of COUNTS) {
      while (clients.length < count) {
        const batch = Math.min(AT_ONCE, count - clients.length);
        clients.push(
          ...(await Promise.all(
            Array.from({ length: batch }, () =>
              MeshBus.connect(credential, { waitForBus: true, say: () => undefined }),
            ),
          )),
        );
      }
      const ms = quantile(await timeEach(ROUNDS, () => server.authority.push()), 0.5);
      base ??= ms;
      console.log(
        line(
          `account update (${REVOKED} revocations) with ${count} connections of the account, p50 of ${ROUNDS}`,
          ms,
          "ms",
          { what: `with ${COUNTS[0]} connections`, value: base },
        ),
      );
      if (count > 0) console.log(`  per connection: ${((ms - base) / count).toFixed(3)} ms`);
    }
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await server.stop();
  }
}

await main();
