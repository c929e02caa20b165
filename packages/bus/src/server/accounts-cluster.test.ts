/**
 * Accounts mode on a real three-server cluster (issue 13): the full resolver of each server
 * takes the account update the mesh pushes to one of them, so a revoked user is refused on every
 * server, its live connections closed, with no reload anywhere; a server that was down for an
 * update takes it from the others at its resolver's next sync (decision 0181).
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jwtAuthenticator } from "@nats-io/nats-core";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startTestCluster, type TestCluster } from "../testing/cluster.js";
import { deadline } from "../testing/harness.js";
import { waitFor } from "../testing/wait-for.js";
import { AccountAuthority, AccountFiles } from "./account-authority.js";
import {
  jwtIssuedAt,
  makeAccountKeys,
  newUserKey,
  serverAccounts,
  writeSecretJson,
} from "./accounts.js";
import { FULL_PERMISSIONS } from "./server-config.js";

describe("accounts mode on a three-server cluster", () => {
  let cluster: TestCluster;
  let authority: AccountAuthority;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-acc-cluster-"));
    const keys = makeAccountKeys();
    const keysPath = join(dir, AccountFiles.keys);
    await writeSecretJson(keysPath, keys);
    cluster = await startTestCluster({ accounts: await serverAccounts(keys, {}) });
    authority = await AccountAuthority.open({
      keysPath,
      revocationsPath: join(dir, AccountFiles.revocations),
      // Updates go to the first server only: the others learn them over the routes.
      servers: [cluster.urls[0] ?? ""],
    });
  });
  after(async () => {
    await authority.close();
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const signed = async (name: string) => {
    const key = newUserKey();
    const jwt = await authority.issue({
      name,
      publicKey: key.publicKey,
      permissions: FULL_PERMISSIONS,
    });
    return { user: name, jwt, seed: key.seed, publicKey: key.publicKey };
  };
  // Stock clients that do not retry a refused login: a refusal or a close is seen as it is.
  const on = (index: number, login: Awaited<ReturnType<typeof signed>>): Promise<NatsConnection> =>
    connect({
      servers: cluster.urls[index] ?? "",
      authenticator: jwtAuthenticator(login.jwt, new TextEncoder().encode(login.seed)),
      reconnect: false,
      timeout: 5_000,
    });

  it("refuses a revoked user on every server within 2 s and closes its connection on each, with no reload", async () => {
    const probe = await signed("n1.probe");
    const bystander = await signed("n1.other");
    // One live connection of the user on each server, and one of another user.
    const live = await Promise.all(cluster.urls.map((_, i) => on(i, probe)));
    const other = await on(2, bystander);
    try {
      const closed = live.map((nc) => nc.closed().then(() => performance.now()));
      const start = performance.now();
      await authority.revoke({ [probe.publicKey]: Math.floor(Date.now() / 1000) });
      const refusedAt: number[] = [];
      for (const [i] of cluster.urls.entries()) {
        await waitFor(
          async () => {
            try {
              await (await on(i, probe)).close();
              return false;
            } catch (error) {
              return /Authorization/i.test((error as Error).message);
            }
          },
          { timeout: 8_000, what: `a revoked login refused by server ${i + 1}` },
        );
        refusedAt.push(performance.now() - start);
      }
      const closedAt = await deadline(Promise.all(closed), 8_000, "every live connection closed");
      const slowest = Math.max(...refusedAt, ...closedAt.map((t) => t - start));
      process.stdout.write(
        `# revoked on one server of three: refused on all and closed in ${Math.round(slowest)} ms\n`,
      );
      // 2 s is the mark; slow shared machines get a factor of 4 before this fails.
      assert.ok(slowest < 2_000 * 4, `refused everywhere in ${Math.round(slowest)} ms`);
      // The other user is untouched, and no server reloaded.
      await other.flush();
      for (const i of cluster.urls.keys()) {
        const log = await readFile(cluster.server(i).logPath, "utf8");
        assert.doesNotMatch(log, /Reloaded/, `server ${i + 1} reloaded nothing`);
      }
    } finally {
      await Promise.all([...live, other].map((nc) => nc.close().catch(() => undefined)));
    }
  });

  const refused = async (index: number, login: Awaited<ReturnType<typeof signed>>) => {
    try {
      await (await on(index, login)).close();
      return false;
    } catch (error) {
      return /Authorization/i.test((error as Error).message);
    }
  };
  const keptIssuedAt = async () =>
    jwtIssuedAt((await readFile(join(dir, AccountFiles.jwt), "utf8")).trim());

  it("a server that was down while a user was revoked refuses it once back, also when the update it missed went out in the same second as the one it holds", async () => {
    const earlier = await signed("n2.earlier");
    const probe = await signed("n2.probe");
    // Two updates within one second of the clock, server 3 down for the second. Each account JWT
    // is issued a second after the last: with two of one second, server 3 came back with the
    // older, handed it to the others at their sync, and all three let the probe in for good.
    while (Date.now() % 1000 > 200) await new Promise((resolve) => setTimeout(resolve, 10));
    await authority.revoke({ [earlier.publicKey]: Math.floor(Date.now() / 1000) });
    const first = await keptIssuedAt();
    await cluster.kill(2);
    await authority.revoke({ [probe.publicKey]: Math.floor(Date.now() / 1000) });
    assert.ok((await keptIssuedAt()) > first, "the second update is issued after the first");
    // Server 3 starts with the JWT it was first given (the test cluster's preload) and the
    // first update in its folder; it takes the second from the others at its next sync.
    await cluster.start(2);
    const back = performance.now();
    for (const i of cluster.urls.keys()) {
      await waitFor(() => refused(i, probe), {
        timeout: 150_000,
        intervalMs: 200,
        what: `the revoked probe refused by server ${i + 1} after server 3 is back`,
      });
    }
    const took = performance.now() - back;
    for (const i of cluster.urls.keys()) {
      assert.ok(await refused(i, earlier), `server ${i + 1} still refuses the earlier revoked`);
      assert.ok(await refused(i, probe), `server ${i + 1} still refuses the probe`);
    }
    process.stdout.write(
      `# a server back from an outage refused the user revoked meanwhile after ${Math.round(took)} ms\n`,
    );
    // The sync is every 5 s; with the old two minutes the user was still admitted after 20 s.
    assert.ok(took < 60_000, `refused ${Math.round(took)} ms after the server was back`);
  });
});
