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
import { startAccountsTestServer, type AccountsTestServer } from "./accounts-harness.js";

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
