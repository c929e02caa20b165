/**
 * The embedded nats-server: `mesh up` and the test harness run a real server as a child process
 * with a configuration the mesh writes, reload it when the users list changes, and stop it.
 *
 * The child stays in our process group on purpose: Ctrl-C in the terminal of `mesh up` then
 * reaches the server too, so it cannot outlive an interrupted mesh. `stop()` is written for
 * both outcomes: the server may already be gone (it took the SIGINT) or still running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { connect as connectTcp } from "node:net";
import { join, resolve } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { writeFileAtomic } from "../kit/atomic-file.js";
import { Lifecycle } from "../kit/lifecycle.js";
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
  readonly maxMemoryStore?: number;
  readonly maxFileStore?: number;
  /** The binary to run; found with findServer() when not given. */
  readonly binary?: NatsServerBinary;
  /** How long the server may take to answer; default 30 s (a large store takes time to recover). */
  readonly startTimeoutMs?: number;
  /**
   * Whether the child keeps this process alive (default true). The test harness turns it off so
   * a test file that forgets to stop its server still exits; the server is killed on exit.
   */
  readonly ref?: boolean;
  readonly signal?: AbortSignal;
}

/** How the server process ended. */
export interface ServerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last lines it printed: the reason, when it ended on its own. */
  readonly lastLines: readonly string[];
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

const LAST_LINES = 40;
const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_RELOAD_TIMEOUT_MS = 10_000;
const DEFAULT_GRACE_MS = 5_000;

// What nats-server 2.9.10 logs (verified): see docs/nats.md §2.
const READY_LINE = "Server is ready";
const LISTENING = /Listening for client connections on (\S+):(\d+)\s*$/;
const RELOADED_LINE = "Reloaded server configuration";
const RELOAD_FAILED = /Failed to reload server configuration:?\s*(.*)$/;

interface LineListener {
  line(line: string): void;
  exit(exit: ServerExit): void;
}

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
    const child = spawn(binary.path, ["-c", configPath], {
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
 * The child's stdout and stderr, line by line: appended to the log file, kept as the last
 * lines, and handed to whoever waits for one (startup, reloads).
 */
class ServerOutput {
  readonly exited: Promise<ServerExit>;
  readonly #log: WriteStream;
  readonly #listeners = new Set<LineListener>();
  readonly #last: string[] = [];
  #exit: ServerExit | undefined;

  constructor(child: ChildProcess, log: WriteStream) {
    this.#log = log;
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      let partial = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const parts = (partial + chunk).split("\n");
        partial = parts.pop() ?? "";
        for (const line of parts) this.#line(line);
      });
      stream.on("end", () => {
        if (partial.length > 0) this.#line(partial);
        partial = "";
      });
    }
    this.exited = new Promise<ServerExit>((resolvePromise) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.#exit !== undefined) return;
        this.#exit = { code, signal, lastLines: [...this.#last] };
        for (const listener of this.#listeners) listener.exit(this.#exit);
        resolvePromise(this.#exit);
      };
      // 'close' comes after the process has exited and its output has been read, so the last
      // lines are complete. 'error' without a pid is a spawn that never ran.
      child.on("close", finish);
      child.on("error", (error) => {
        if (child.pid === undefined) {
          this.#line(`spawn failed: ${error.message}`);
          finish(null, null);
        }
      });
    });
  }

  #line(raw: string): void {
    const line = raw.replace(/\r$/, "");
    this.#log.write(`${line}\n`);
    this.#last.push(line);
    if (this.#last.length > LAST_LINES) this.#last.shift();
    for (const listener of this.#listeners) listener.line(line);
  }

  hasExited(): boolean {
    return this.#exit !== undefined;
  }

  lastLines(): readonly string[] {
    return [...this.#last];
  }

  /** The first line `match` accepts, from now on. Rejects on exit, deadline or abort. */
  waitForLine(
    match: (line: string) => boolean,
    options: { timeoutMs: number; signal?: AbortSignal; what: string; code: ErrorCode },
  ): Promise<string> {
    return this.#wait<string>(options, (resolvePromise) => (line) => {
      if (match(line)) resolvePromise(line);
    });
  }

  /** The address from `Listening for client connections on …`, once `Server is ready`. */
  waitForReady(options: {
    deadline: number;
    timeoutMs: number;
    signal?: AbortSignal;
  }): Promise<{ host: string; port: number }> {
    let address: { host: string; port: number } | undefined;
    return this.#wait<{ host: string; port: number }>(
      {
        timeoutMs: Math.max(0, options.deadline - Date.now()),
        ...(options.signal ? { signal: options.signal } : {}),
        what: `to be ready (it has ${options.timeoutMs} ms)`,
        code: ErrorCode.SERVER_START_FAILED,
      },
      (resolvePromise, reject) => (line) => {
        const listening = LISTENING.exec(line);
        if (listening !== null) {
          address = { host: unbracket(listening[1] ?? ""), port: Number(listening[2]) };
        } else if (line.includes(READY_LINE)) {
          if (address === undefined) {
            reject(new Error(`the server said it is ready but not where it listens`));
          } else {
            resolvePromise(address);
          }
        }
      },
    );
  }

  #wait<T>(
    options: { timeoutMs: number; signal?: AbortSignal; what: string; code: ErrorCode },
    onLine: (resolve: (value: T) => void, reject: (error: Error) => void) => (line: string) => void,
  ): Promise<T> {
    const { signal, what, code } = options;
    return new Promise<T>((resolvePromise, reject) => {
      let settled = false;
      const finish = (): void => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#listeners.delete(listener);
      };
      const ok = (value: T): void => {
        if (settled) return;
        finish();
        resolvePromise(value);
      };
      const fail = (error: Error): void => {
        if (settled) return;
        finish();
        reject(error);
      };
      const onAbort = (): void => {
        fail(
          new MeshError(ErrorCode.ABORTED, `waiting for nats-server ${what} was aborted`, {
            cause: signal?.reason,
          }),
        );
      };
      const timer = setTimeout(() => {
        fail(
          new MeshError(
            code,
            `nats-server did not answer in time: waited ${options.timeoutMs} ms for it ${what}.` +
              linesHint(this.#last),
          ),
        );
      }, options.timeoutMs);
      const listener: LineListener = {
        line: onLine(ok, fail),
        exit: (exit) => {
          fail(
            new MeshError(
              code,
              `nats-server exited (${describeExit(exit)}) while waiting for it ${what}.` +
                linesHint(exit.lastLines),
            ),
          );
        },
      };
      if (this.#exit !== undefined) {
        listener.exit(this.#exit);
        return;
      }
      if (signal?.aborted === true) {
        onAbort();
        return;
      }
      this.#listeners.add(listener);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Flushes and closes the log file. */
  close(): Promise<void> {
    if (this.#log.closed || this.#log.writableEnded) return Promise.resolve();
    return new Promise((resolvePromise) => this.#log.end(resolvePromise));
  }
}

/**
 * Connects to the client port and reads the server's INFO (sent before any authentication):
 * proof that it accepts client connections, and its `jetstream` flag that JetStream is on.
 */
function probeJetStream(
  host: string,
  port: number,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const socket = connectTcp({ host: dialHost(host), port });
    let received = "";
    const done = (error?: Error): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      if (error === undefined) resolvePromise();
      else reject(error);
    };
    const onAbort = (): void => {
      done(
        new MeshError(ErrorCode.ABORTED, "starting nats-server was aborted", {
          cause: signal?.reason,
        }),
      );
    };
    const timer = setTimeout(
      () => done(new Error(`no INFO from ${host}:${port} in time`)),
      Math.max(0, deadline - Date.now()),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.setEncoding("utf8");
    socket.on("error", (error) => done(error));
    socket.on("data", (chunk: string) => {
      received += chunk;
      const end = received.indexOf("\r\n");
      if (end < 0) return;
      const first = received.slice(0, end);
      if (!first.startsWith("INFO ")) {
        done(
          new Error(
            `expected INFO from ${host}:${port}, got ${JSON.stringify(first.slice(0, 200))}`,
          ),
        );
        return;
      }
      let info: unknown;
      try {
        info = JSON.parse(first.slice(5));
      } catch (error) {
        done(new Error(`unreadable INFO from ${host}:${port}: ${errorText(error)}`));
        return;
      }
      if (
        typeof info === "object" &&
        info !== null &&
        (info as { jetstream?: unknown }).jetstream === true
      ) {
        done();
      } else {
        done(
          new MeshError(
            ErrorCode.SERVER_START_FAILED,
            `nats-server on ${host}:${port} answers but JetStream is not enabled; check the log for why`,
          ),
        );
      }
    });
  });
}

/** Resolves true when the process ended within `ms`, false when the time ran out or `signal` fired. */
function raceExit(
  exited: Promise<ServerExit>,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  return new Promise((resolvePromise) => {
    if (signal?.aborted === true) {
      resolvePromise(false);
      return;
    }
    const finish = (value: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolvePromise(value);
    };
    const onAbort = (): void => finish(false);
    const timer = setTimeout(() => finish(false), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
    void exited.then(() => finish(true));
  });
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

/** Where a client on this machine reaches a server listening on `host`. */
function dialHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "::1";
  return host;
}

/** The host part of a URL: IPv6 addresses go in brackets. */
function urlHost(host: string): string {
  const dial = dialHost(host);
  return dial.includes(":") ? `[${dial}]` : dial;
}

function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function describeExit(exit: ServerExit): string {
  if (exit.signal !== null) return `signal ${exit.signal}`;
  if (exit.code !== null) return `code ${exit.code}`;
  return "it did not run";
}

function linesHint(lines: readonly string[]): string {
  if (lines.length === 0) return " It printed nothing.";
  return ` Its last lines:\n${lines.slice(-15).join("\n")}`;
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted === true) {
    throw new MeshError(ErrorCode.ABORTED, `${what} was aborted`, { cause: signal.reason });
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
