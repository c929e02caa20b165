/**
 * The controller as a process: `mesh-controller --root DIR` (or `mesh controller`), started by
 * `mesh up` beside the bus it runs. It finds everything under the root `mesh up` made: the bus's
 * folder (to reload its users, or to read that it runs the mesh's accounts, whose keys are in
 * `<root>/accounts`), the static users (`users.json`), its credential
 * (`credentials/controller.json`, or `--credential FILE`), and keeps its own state in
 * `<root>/controller` (0700). SIGTERM or SIGINT stop it after the pass in progress, within a grace.
 * Beside the controller it runs the assigner keeper (decision 0191).
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { MeshBus } from "@mesh/bus";
import {
  AccountAuthority,
  AccountFiles,
  AuthMode,
  readServerBase,
  serverFolderSink,
} from "@mesh/bus/server";
import { DEFAULT_GRACE_MS, Lifecycle, loggerFrom, runProcess, type RunOptions } from "@mesh/kit";
import { AssignerKeeper } from "./assigner-keeper.js";
import { readStaticUsers } from "./broker.js";
import { Controller } from "./controller.js";
import { DEFAULT_CREDENTIAL_LIFETIME_MS } from "./credential-lifetime.js";

export interface DaemonOptions {
  /** The mesh's root (`mesh up --root`). */
  readonly root: string;
  /** The controller's credential file; `<root>/credentials/controller.json` by default. */
  readonly credential?: string;
  /** The bus server's folder; `<root>/bus` by default. */
  readonly busDir?: string;
  /** A bus the mesh does not own: no users list, every credential the controller's login. */
  readonly sharedLogin?: boolean;
  /**
   * Accounts mode: how often, at most, spent join users' revocations get an account update of
   * their own (60 s by default; revocation-pusher.ts).
   */
  readonly joinRevocationsEveryMs?: number;
  /**
   * Accounts mode: how long a host's, runtime's or module's JWT lives (decision 0150); 6 hours
   * by default ({@link DEFAULT_CREDENTIAL_LIFETIME_MS}).
   */
  readonly credentialLifetimeMs?: number;
  /** How long a stop may take before the process gives up on a clean one; default 10 s. */
  readonly graceMs?: number;
  readonly log?: (line: string) => void;
}

/** The folders and files a controller on `root` uses. */
export function controllerPaths(root: string, credential?: string, busDir?: string) {
  const abs = resolve(root);
  return {
    root: abs,
    dir: join(abs, "controller"),
    bus: busDir ?? join(abs, "bus"),
    users: join(abs, "users.json"),
    accounts: join(abs, "accounts"),
    credential: credential ?? join(abs, "credentials", "controller.json"),
  };
}

/**
 * Runs the controller as this process until SIGTERM or SIGINT, within the grace period, through
 * the kit's process shell; resolves to the exit code (a failure is said once, with its code).
 */
export function runControllerProcess(options: DaemonOptions): Promise<number> {
  const { log } = options;
  return runProcess(
    {
      name: "controller",
      graceMs: options.graceMs ?? DEFAULT_GRACE_MS,
      ...(log === undefined ? {} : { log: loggerFrom((line) => log(`controller: ${line}`)) }),
    },
    ({ signal }) => runControllerDaemon({ ...options, signal }),
  );
}

/** Runs the controller until the signal aborts. */
export async function runControllerDaemon(options: DaemonOptions & RunOptions): Promise<void> {
  const paths = controllerPaths(options.root, options.credential, options.busDir);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
  const bus = await MeshBus.connectWithFile(paths.credential, {
    name: "controller",
    waitForBus: true,
    signal: options.signal,
  });
  let accounts: AccountAuthority | undefined;
  try {
    // The bus as mesh up started it decides the mode: a users list, or the mesh's accounts.
    const auth =
      options.sharedLogin === true ? AuthMode.users : (await readServerBase(paths.bus)).auth;
    const { credential } = bus;
    accounts =
      options.sharedLogin !== true && auth === AuthMode.accounts
        ? await AccountAuthority.open({
            keysPath: join(paths.accounts, AccountFiles.keys),
            revocationsPath: join(paths.accounts, AccountFiles.revocations),
            servers: credential.servers,
            ...(credential.fingerprint === undefined
              ? {}
              : { fingerprint: credential.fingerprint }),
            ...(credential.ca === undefined ? {} : { ca: credential.ca }),
          })
        : undefined;
    const controller = await Controller.create({
      bus,
      dir: paths.dir,
      ...(options.sharedLogin === true
        ? { sharedLogin: true }
        : accounts !== undefined
          ? {
              accounts,
              ...(options.joinRevocationsEveryMs === undefined
                ? {}
                : { joinRevocationsEveryMs: options.joinRevocationsEveryMs }),
              credentialLifetimeMs: options.credentialLifetimeMs ?? DEFAULT_CREDENTIAL_LIFETIME_MS,
            }
          : {
              sink: serverFolderSink(paths.bus),
              staticUsers: () => readStaticUsers(paths.users),
            }),
      log,
    });
    // Beside it, rule 5 for the assigner's own cells (decision 0191); either ending stops both.
    const keeper = AssignerKeeper.create({ bus, log: (line) => log(`controller: ${line}`) });
    const either = new AbortController();
    const signal = AbortSignal.any([options.signal, either.signal]);
    const running = controller.run({ signal }).finally(() => either.abort());
    const keeping = keeper.run({ signal }).finally(() => either.abort());
    void controller.ready.then(() => log(`controller: running on ${paths.root}`));
    await Promise.all([running, keeping]);
    if (!options.signal.aborted && controller.state === Lifecycle.failed) {
      throw new MeshError(
        ErrorCode.INTERNAL,
        "the controller failed; its reason is in the log above",
      );
    }
  } finally {
    await accounts?.close();
    await bus.close().catch(() => undefined);
  }
}
