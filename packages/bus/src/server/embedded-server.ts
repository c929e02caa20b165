/**
 * The embedded nats-server: `mesh up` and the test harness run a real server as a child process
 * with a configuration the mesh writes, reload it when the users list changes, and stop it.
 *
 * The child stays in our process group on purpose: Ctrl-C in the terminal of `mesh up` then
 * reaches the server too, so it cannot outlive an interrupted mesh. `stop()` is written for
 * both outcomes: the server may already be gone (it took the SIGINT) or still running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { Lifecycle, writeFileAtomic } from "@mesh/kit";
import {
  errorText,
  linesHint,
  probeJetStream,
  raceExit,
  ServerOutput,
  urlHost,
  type ServerExit,
} from "./server-output.js";
import { findServer, type NatsServerBinary } from "./find-server.js";
import type { ServerAccounts } from "./accounts.js";
import {
  AuthMode,
  DEFAULT_HOST,
  renderServerConfig,
  type ServerCluster,
  type ServerConfigOptions,
  type ServerTls,
  type ServerUser,
} from "./server-config.js";

/** Files the server keeps in its folder. */
export const ServerFiles = {
  config: "nats-server.conf",
  log: "nats-server.log",
  pid: "nats-server.pid",
  store: "store",
  /**
   * The options the config was rendered from, users aside, so another process (the controller)
   * can render the same config with a new users list and reload: see reload-users.ts.
   */
  options: "nats-server.options.json",
  /** Accounts mode: the full resolver's folder, where the server keeps the account JWTs. */
  resolver: "jwt",
} as const;

/** What the options file holds: the config's options but the users or accounts, and the mode. */
export type ServerBase = Omit<ServerConfigOptions, "users" | "accounts"> & {
  /** Absent in files written before accounts mode: a users list. */
  readonly auth?: AuthMode;
};

export interface EmbeddedServerOptions {
  /** The server's folder: config, log, pid file and (by default) the JetStream store. */
  readonly dir: string;
  /** The client port; 0 lets the server pick a free one (read back from its log). */
  readonly port: number;
  /** Users-list mode: the users; never empty (a server without users lets anyone in). */
  readonly users?: readonly ServerUser[];
  /**
   * Accounts mode (decision 0080): the operator and accounts it trusts; its full resolver keeps
   * the account JWTs in `<dir>/jwt`. Exactly one of `users` and `accounts` is given.
   */
  readonly accounts?: ServerAccounts;
  readonly host?: string;
  /** Default `mesh`. Must stay the same for a folder: a reload cannot change it. */
  readonly serverName?: string;
  /** Default `<dir>/store`; the server keeps its data in `<storeDir>/jetstream`. */
  readonly storeDir?: string;
  readonly tls?: ServerTls;
  /** One server of a cluster (`serverName` must then differ per server). */
  readonly cluster?: ServerCluster;
  /** The HTTP monitoring port; off when absent. */
  readonly monitorPort?: number;
  readonly maxMemoryStore?: number;
  readonly maxFileStore?: number;
  /** The binary to run; found with findServer() when not given. */
  readonly binary?: NatsServerBinary;
  /**
   * A network namespace to run the server in (`ip netns exec NS nats-server …`, which execs: the
   * pid is the server's): a server on a network stack of its own, as on another machine.
   */
  readonly netns?: string;
  /** How long the server may take to answer; default 30 s (a large store takes time to recover). */
  readonly startTimeoutMs?: number;
  /**
   * Whether the child keeps this process alive (default true). The test harness turns it off so
   * a test file that forgets to stop its server still exits; the server is killed on exit.
   */
  readonly ref?: boolean;
  readonly signal?: AbortSignal;
}

export interface ReloadOptions {
  /** How long to wait for the server to say it reloaded; default 10 s. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface StopOptions {
  /** How long the server may take to shut down after SIGTERM before it is killed; default 5 s. */
  readonly graceMs?: number;
  /** Aborting skips what is left of the grace period and kills the server. */
  readonly signal?: AbortSignal;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_RELOAD_TIMEOUT_MS = 10_000;
const DEFAULT_GRACE_MS = 5_000;

// What nats-server 2.9.10 logs when it reloads (verified): see docs/nats.md §2.
const RELOADED_LINE = "Reloaded server configuration";
const RELOAD_FAILED = /Failed to reload server configuration:?\s*(.*)$/;

export class EmbeddedServer implements AsyncDisposable {
  /** `nats://host:port`, the address clients use. */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly dir: string;
  readonly storeDir: string;
  readonly configPath: string;
  readonly logPath: string;
  /** The server's version, e.g. `2.9.10`. */
  readonly version: string;
  /** How it lets users in: a users list (reloaded on change) or the mesh's accounts. */
  readonly auth: AuthMode;
  /** Resolves when the process has ended, for whatever reason; never rejects. */
  readonly exited: Promise<ServerExit>;

  readonly #child: ChildProcess;
  readonly #output: ServerOutput;
  readonly #base: ServerBase;
  readonly #pidPath: string;
  #state: Lifecycle = Lifecycle.running;
  #configText: string;
  #reloads: Promise<unknown> = Promise.resolve();
  #stopping: Promise<void> | undefined;

  private constructor(init: {
    child: ChildProcess;
    output: ServerOutput;
    base: ServerBase;
    configText: string;
    dir: string;
    host: string;
    port: number;
  }) {
    this.#child = init.child;
    this.#output = init.output;
    this.#base = init.base;
    this.#configText = init.configText;
    this.dir = init.dir;
    this.port = init.port;
    this.pid = init.child.pid ?? -1;
    this.url = `nats://${urlHost(init.host)}:${init.port}`;
    this.storeDir = init.base.storeDir;
    this.version = init.base.serverVersion;
    this.auth = init.base.auth ?? AuthMode.users;
    this.configPath = join(init.dir, ServerFiles.config);
    this.logPath = join(init.dir, ServerFiles.log);
    this.#pidPath = join(init.dir, ServerFiles.pid);
    this.exited = init.output.exited.then((exit) => {
      if (this.#state === Lifecycle.running) this.#state = Lifecycle.failed;
      return exit;
    });
  }

  /**
   * Writes the config into `dir`, starts `nats-server -c <config>`, and resolves once the server
   * accepts client connections with JetStream enabled. If the server exits first, the error
   * (SERVER_START_FAILED) quotes the last lines it printed.
   */
  static async start(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
    const { signal } = options;
    const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    throwIfAborted(signal, "starting nats-server");
    const dir = resolve(options.dir);
    const binary = options.binary ?? (await findServer(signal === undefined ? {} : { signal }));
    const host = options.host ?? DEFAULT_HOST;
    const base: ServerBase = {
      auth: options.accounts === undefined ? AuthMode.users : AuthMode.accounts,
      serverVersion: binary.version,
      serverName: options.serverName ?? "mesh",
      host,
      port: options.port,
      storeDir: resolve(options.storeDir ?? join(dir, ServerFiles.store)),
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
      ...(options.monitorPort === undefined ? {} : { monitorPort: options.monitorPort }),
      ...(options.maxMemoryStore === undefined ? {} : { maxMemoryStore: options.maxMemoryStore }),
      ...(options.maxFileStore === undefined ? {} : { maxFileStore: options.maxFileStore }),
    };
    const configText = renderServerConfig({
      ...base,
      ...(options.accounts === undefined
        ? { users: options.users ?? [] }
        : { accounts: { ...options.accounts, resolverDir: join(dir, ServerFiles.resolver) } }),
    });
    const configPath = join(dir, ServerFiles.config);
    const pidPath = join(dir, ServerFiles.pid);

    await mkdir(dir, { recursive: true, mode: 0o700 });
    await mkdir(base.storeDir, { recursive: true, mode: 0o700 });
    await refuseIfRunning(pidPath, configPath);
    await writeFileAtomic(configPath, configText);
    await writeFileAtomic(join(dir, ServerFiles.options), `${JSON.stringify(base)}\n`);

    throwIfAborted(signal, "starting nats-server");
    const log = createWriteStream(join(dir, ServerFiles.log), { flags: "a", mode: 0o600 });
    // A full disk must not crash the mesh: the log is for people, the lines are still watched.
    log.on("error", () => undefined);
    const argv = [binary.path, "-c", configPath];
    const [command = binary.path, ...args] =
      options.netns === undefined ? argv : ["ip", "netns", "exec", options.netns, ...argv];
    const child = spawn(command, args, {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = new ServerOutput(child, log);
    if (options.ref === false) {
      child.unref();
      unrefStream(child.stdout);
      unrefStream(child.stderr);
    }
    // Whatever happens to this process, the server must not outlive it (process.exit(), a
    // crash that still runs exit handlers). A SIGKILL of this process cannot be caught: Ctrl-C
    // reaching the whole process group covers the interactive case.
    const killOnExit = (): void => {
      child.kill("SIGKILL");
    };
    process.once("exit", killOnExit);
    void output.exited.then(() => process.removeListener("exit", killOnExit));

    let address: { host: string; port: number };
    try {
      address = await output.waitForReady({ deadline, timeoutMs, ...(signal ? { signal } : {}) });
      await probeJetStream(address.host, address.port, deadline, signal);
    } catch (error) {
      child.kill("SIGKILL");
      const exit = await output.exited;
      await output.close();
      if (error instanceof MeshError) throw error;
      throw new MeshError(
        ErrorCode.SERVER_START_FAILED,
        `nats-server did not answer: ${errorText(error)}.${linesHint(exit.lastLines)}`,
        { path: configPath, cause: error },
      );
    }
    if (child.pid !== undefined) await writeFileAtomic(pidPath, `${child.pid}\n`);
    return new EmbeddedServer({ child, output, base, configText, dir, host, port: address.port });
  }

  /** The kit's lifecycle; `failed` is a server that exited without being asked to. */
  get state(): Lifecycle {
    return this.#state;
  }

  /** The last lines the server printed (also in `logPath`). */
  get lastLines(): readonly string[] {
    return this.#output.lastLines();
  }

  /**
   * Replaces the users list: rewrites the config atomically, sends SIGHUP, and resolves when
   * the server logs that it reloaded. Connected clients of unchanged users keep their
   * connections; removed users are disconnected by the server.
   *
   * A config the server refuses gives SERVER_RELOAD_FAILED with the server's words; the server
   * keeps running the previous config, and the previous file is put back so a restart runs what
   * is running now. Calls are applied one at a time, in call order.
   */
  setUsers(users: readonly ServerUser[], options: ReloadOptions = {}): Promise<void> {
    const run = this.#reloads.then(() => this.#reload(users, options));
    this.#reloads = run.catch(() => undefined);
    return run;
  }

  async #reload(users: readonly ServerUser[], options: ReloadOptions): Promise<void> {
    const { signal } = options;
    throwIfAborted(signal, "reloading nats-server");
    if (this.auth === AuthMode.accounts) {
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `nats-server (pid ${this.pid}) runs the mesh's accounts, not a users list: users are issued as signed JWTs and taken away by an account update, with nothing to reload`,
        { path: this.configPath },
      );
    }
    if (this.#state !== Lifecycle.running) {
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `nats-server (pid ${this.pid}) is ${this.#state}, so it cannot take a new users list; start it again`,
        { path: this.configPath },
      );
    }
    // Rendering first: a list the mesh cannot write leaves the file and the server untouched.
    const text = renderServerConfig({ ...this.#base, users });
    const previous = this.#configText;
    await writeFileAtomic(this.configPath, text);
    const timeoutMs = options.timeoutMs ?? DEFAULT_RELOAD_TIMEOUT_MS;
    // Listen before signalling: the answer can come within a millisecond.
    const outcome = this.#output.waitForLine(
      (line) => line.includes(RELOADED_LINE) || RELOAD_FAILED.test(line),
      {
        timeoutMs,
        ...(signal ? { signal } : {}),
        what: "to confirm the reload",
        code: ErrorCode.SERVER_RELOAD_FAILED,
      },
    );
    this.#child.kill("SIGHUP");
    let line: string;
    try {
      line = await outcome;
    } catch (error) {
      // Unknown whether the server took the file; it stays, so a restart runs the newest list.
      this.#configText = text;
      throw error;
    }
    const failed = RELOAD_FAILED.exec(line);
    if (failed !== null) {
      await writeFileAtomic(this.configPath, previous);
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `nats-server refused the new users list and keeps running the previous one: ` +
          `${failed[1] ?? line}. The config that failed was not kept; fix the users or ` +
          `permissions it names and set them again.`,
        { path: this.configPath },
      );
    }
    this.#configText = text;
  }

  /**
   * Stops the server: SIGTERM, up to `graceMs` for it to shut down, then SIGKILL. Resolves when
   * the process is gone. A second call returns the first call's promise.
   */
  stop(options: StopOptions = {}): Promise<void> {
    this.#stopping ??= this.#stop(options);
    return this.#stopping;
  }

  async #stop(options: StopOptions): Promise<void> {
    if (this.#state === Lifecycle.running) this.#state = Lifecycle.stopping;
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    if (!this.#output.hasExited()) {
      this.#child.kill("SIGTERM");
      const ended = await raceExit(this.exited, graceMs, options.signal);
      if (!ended) this.#child.kill("SIGKILL");
    }
    await this.exited;
    await this.#output.close();
    await rm(this.#pidPath, { force: true });
    if (this.#state === Lifecycle.stopping) this.#state = Lifecycle.stopped;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * Refuses to start a second server on a folder whose server still runs: two servers on one
 * JetStream store corrupt it. Linux only (it reads /proc to be sure the pid is that server and
 * not a process that reused the number); elsewhere the check is skipped.
 */
async function refuseIfRunning(pidPath: string, configPath: string): Promise<void> {
  let pid: number;
  try {
    pid = Number((await readFile(pidPath, "utf8")).trim());
  } catch {
    return;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return;
  let cmdline: string;
  try {
    cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return;
  }
  if (cmdline.split("\0").includes(configPath)) {
    throw new MeshError(
      ErrorCode.ROOT_IN_USE,
      `nats-server (pid ${pid}) is already running on ${configPath}; stop it (or the mesh that ` +
        `started it) before starting another on the same folder`,
      { path: configPath },
    );
  }
}

function unrefStream(stream: NodeJS.ReadableStream | null): void {
  const socket = stream as { unref?: () => void } | null;
  socket?.unref?.();
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted === true) {
    throw new MeshError(ErrorCode.ABORTED, `${what} was aborted`, { cause: signal.reason });
  }
}
