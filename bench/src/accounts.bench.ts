/**
 * Accounts mode against the users list (decision 0080): the time from the broker issuing one new
 * principal to that principal's first connect, and from revoking one to its login being refused,
 * with 100 and 1,000 users already issued and 10 clients connected. The baseline is the same
 * broker in users-list mode on a real server in the same run (bcrypt once, the list rewritten
 * and the server reloaded); accounts mode signs a JWT and, to revoke, pushes one account update.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MeshBus } from "@mesh/bus";
import { hashPassword } from "@mesh/bus/server";
import { startAccountsTestServer, startTestServer } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import { BROKER_USERS_FILE, Broker, PrincipalKind, Vault } from "@mesh/controller";
import { line, quantile, timeEach } from "./measure.js";

const SIZES = [100, 1000];
const ROUNDS = 5;
const CONNECTED = 10;

const host = (node: string) => ({
  user: `${node}.host`,
  node,
  module: "host",
  kind: PrincipalKind.host,
  permissions: hostGrant({ node }),
});

interface Mode {
  readonly broker: Broker;
  readonly url: string;
  readonly clients: MeshBus[];
  stop(): Promise<void>;
}

/** A broker in users-list mode with `size` users (one shared hash: the list's size is the point). */
async function usersMode(size: number, vault: Vault): Promise<Mode> {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-users-"));
  const password = randomBytes(18).toString("base64url");
  const passwordHash = await hashPassword(password);
  const users = Array.from({ length: size }, (_, i) => ({
    ...host(`n${i}`),
    passwordHash,
    password: vault.seal(password, `n${i}.host`),
  }));
  await writeFile(join(dir, BROKER_USERS_FILE), JSON.stringify({ version: 1, users }));
  const admin = {
    user: server.admin.user,
    passwordHash: await hashPassword(server.admin.password),
    permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } },
  };
  const broker = await Broker.open({
    dir,
    vault,
    sink: server.server,
    staticUsers: () => Promise.resolve([admin]),
    servers: [server.url],
  });
  broker.requireReload();
  await broker.commit();
  return connected(broker, server, dir);
}

/** The mode with CONNECTED hosts connected; stopping it closes them, the server and its folder. */
async function connected(
  broker: Broker,
  server: { readonly url: string; stop(): Promise<void> },
  dir: string,
): Promise<Mode> {
  const clients: MeshBus[] = [];
  for (let i = 0; i < CONNECTED; i++) {
    clients.push(await MeshBus.connect(broker.credential(`n${i}.host`)));
  }
  return {
    broker,
    url: server.url,
    clients,
    async stop() {
      await Promise.all(clients.map((c) => c.close()));
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function accountsMode(size: number, vault: Vault): Promise<Mode> {
  const server = await startAccountsTestServer();
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-acc-"));
  const broker = await Broker.open({
    dir,
    vault,
    accounts: server.authority,
    servers: [server.url],
  });
  for (let i = 0; i < size; i++) await broker.ensure(host(`n${i}`));
  await broker.commit();
  return connected(broker, server, dir);
}

/** Issue one new principal and connect with it; then revoke it and wait until it is refused. */
async function measure(mode: Mode, tag: string): Promise<{ issue: number; revoke: number }> {
  const issue = await timeEach(ROUNDS, async (i) => {
    await mode.broker.ensure(host(`${tag}${i}`));
    await mode.broker.commit();
    const bus = await MeshBus.connect(mode.broker.credential(`${tag}${i}.host`), {
      waitForBus: true,
      say: () => undefined,
    });
    await bus.close();
  });
  const revoke = await timeEach(ROUNDS, async (i) => {
    const credential = mode.broker.credential(`${tag}${i}.host`);
    mode.broker.revoke(`${tag}${i}.host`);
    await mode.broker.commit();
    // Refused: the login fails (once, no waiting).
    const bus = await MeshBus.connect(credential, { say: () => undefined }).catch(() => undefined);
    if (bus !== undefined) {
      await bus.close();
      throw new Error(`${tag}${i} still connects after its revocation`);
    }
  });
  return { issue: quantile(issue, 0.5), revoke: quantile(revoke, 0.5) };
}

async function main(): Promise<void> {
  const vault = Vault.withKey(randomBytes(32));
  for (const size of SIZES) {
    const users = await usersMode(size, vault);
    const baseline = await measure(users, "u").finally(() => users.stop());
    const accounts = await accountsMode(size, vault);
    const signed = await measure(accounts, "a").finally(() => accounts.stop());
    console.log(`${size} users issued, ${CONNECTED} connected; median of ${ROUNDS}`);
    console.log(
      line("  accounts: issue one principal + its first connect", signed.issue, "ms", {
        what: "users list",
        value: baseline.issue,
      }),
    );
    console.log(
      line("  accounts: revoke one principal + its login refused", signed.revoke, "ms", {
        what: "users list",
        value: baseline.revoke,
      }),
    );
  }
}

await main();
