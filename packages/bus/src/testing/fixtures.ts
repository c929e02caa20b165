/**
 * What many suites set up alike: a scratch folder for one test, an accounts-mode server and a
 * folder for one `describe`, and whether the bus refuses a login. The hooks come from the caller (`node:test`'s `before` and
 * `after`), so this entry does not load the test runner into processes that only import it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Credential } from "@mesh/protocol";
import { MeshBus } from "../mesh-bus.js";
import { ensureLayout } from "../layout-setup.js";
import { startAccountsTestServer, type AccountsTestServer } from "./accounts-harness.js";
import {
  credentialFor,
  startTestServer,
  type TestServer,
  type TestServerOptions,
  type TestUser,
} from "./harness.js";

type Hook = (fn: () => Promise<void>) => void;

/** Filled in by the suite's `before`: read it inside the tests, never at the describe's level. */
export interface AccountsSuite {
  readonly server: AccountsTestServer;
  /** A fresh folder under the system's temp folder, removed after the suite. */
  readonly dir: string;
}

/**
 * Starts an accounts-mode server and makes a folder named `<prefix>…` before the suite's tests;
 * stops the server and removes the folder after them.
 */
export function accountsSuite(prefix: string, hooks: { before: Hook; after: Hook }): AccountsSuite {
  const suite: { server?: AccountsTestServer; dir?: string } = {};
  hooks.before(async () => {
    suite.server = await startAccountsTestServer();
    suite.dir = await mkdtemp(join(tmpdir(), prefix));
  });
  hooks.after(async () => {
    await suite.server?.stop();
    if (suite.dir !== undefined) await rm(suite.dir, { recursive: true, force: true });
  });
  return {
    get server() {
      if (suite.server === undefined) throw new Error("accountsSuite: read before the suite began");
      return suite.server;
    },
    get dir() {
      if (suite.dir === undefined) throw new Error("accountsSuite: read before the suite began");
      return suite.dir;
    },
  };
}

/** Filled in by the suite's `before`: read it inside the tests, never at the describe's level. */
export interface BusSuite {
  readonly server: TestServer;
  /** Connected with every permission, as `n0.<module>`. */
  readonly admin: MeshBus;
  /** Connects as one of the suite's users; closed after the suite's tests, before the admin. */
  connect(user: Pick<TestUser, "user" | "password">, as: ConnectAs): Promise<MeshBus>;
}

/** Who a connection says it is: its node and module. */
type ConnectAs = { readonly node: string; readonly module: string };

/**
 * Starts a test server (with `users`) and connects its admin before the suite's tests, with the
 * mesh's layout when asked; after them closes what `connect` opened and the admin, and stops the
 * server — resumed first, so a test that paused it with SIGSTOP and failed does not keep the
 * stop from ending it.
 */
export function busSuite(
  options: {
    readonly module: string;
    readonly layout?: boolean;
    /**
     * What the suite's tests need besides, set up in the suite's own hook once the admin is
     * connected, and undone first after them (node 20 runs a file's hooks at once, not in turn).
     */
    readonly setUp?: () => Promise<void>;
    readonly tearDown?: () => Promise<void>;
  } & Pick<TestServerOptions, "users">,
  hooks: { before: Hook; after: Hook },
): BusSuite {
  const suite: { server?: TestServer; admin?: MeshBus } = {};
  const opened: MeshBus[] = [];
  hooks.before(async () => {
    const server = await startTestServer(
      options.users === undefined ? {} : { users: options.users },
    );
    suite.server = server;
    suite.admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: "n0", module: options.module }),
    );
    if (options.layout === true) await ensureLayout(suite.admin);
    await options.setUp?.();
  });
  hooks.after(async () => {
    if (suite.server !== undefined) process.kill(suite.server.pid, "SIGCONT");
    await options.tearDown?.();
    for (const bus of opened.splice(0)) await bus.close();
    await suite.admin?.close();
    await suite.server?.stop();
  });
  const set = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("busSuite: read before the suite began");
    return value;
  };
  return {
    get server() {
      return set(suite.server);
    },
    get admin() {
      return set(suite.admin);
    },
    async connect(user, as) {
      const bus = await MeshBus.connect(credentialFor(set(suite.server), user, as));
      opened.push(bus);
      return bus;
    },
  };
}

/** Whether the bus refuses `credential` when it connects (an authorization violation); other errors throw. */
export async function refusesLogin(credential: Credential): Promise<boolean> {
  try {
    await (await MeshBus.connect(credential, { say: () => undefined })).close();
    return false;
  } catch (error) {
    if (/Authorization/i.test(String(error))) return true;
    throw error;
  }
}

/**
 * Makes fresh folders named `<prefix>…` under the system's temp folder for a test file's tests,
 * every one removed after them.
 */
export function scratchFolders(hooks: { after: Hook }): (prefix: string) => Promise<string> {
  const made: string[] = [];
  hooks.after(async () => {
    for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return async (prefix) => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** Runs `fn` with a fresh folder named `<prefix>…` under the system's temp folder, removed after. */
export async function withTempDir(
  prefix: string,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
