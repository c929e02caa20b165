/**
 * The server child's side as the embedded server reads it: its output line by line (the log file,
 * the last lines, the lines a start or reload waits for), how it exited, and the probe that says
 * it accepts clients with JetStream on.
 */
import type { ChildProcess } from "node:child_process";
import type { WriteStream } from "node:fs";
import { connect as connectTcp } from "node:net";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { withDeadline, within } from "@mesh/kit";

/** How the server process ended. */
export interface ServerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last lines it printed: the reason, when it ended on its own. */
  readonly lastLines: readonly string[];
}

const LAST_LINES = 40;

// What nats-server 2.9.10 logs when it starts (verified): see docs/nats.md §2.
const READY_LINE = "Server is ready";
const LISTENING = /Listening for client connections on (\S+):(\d+)\s*$/;

interface LineListener {
  line(line: string): void;
  exit(exit: ServerExit): void;
}

/**
 * The child's stdout and stderr, line by line: appended to the log file, kept as the last
 * lines, and handed to whoever waits for one (startup, reloads).
 */
export class ServerOutput {
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
    return withDeadline(({ signal: ended }) => this.#heard(onLine, code, what, ended), {
      ms: options.timeoutMs,
      ...(signal === undefined ? {} : { signal }),
      expired: () =>
        new MeshError(
          code,
          `nats-server did not answer in time: waited ${options.timeoutMs} ms for it ${what}.` +
            linesHint(this.#last),
        ),
      aborted: () =>
        new MeshError(ErrorCode.ABORTED, `waiting for nats-server ${what} was aborted`, {
          cause: signal?.reason,
        }),
    });
  }

  /** What `onLine` settles, or the server's exit; its listener is let go either way, or when `ended` aborts. */
  #heard<T>(
    onLine: (resolve: (value: T) => void, reject: (error: Error) => void) => (line: string) => void,
    code: ErrorCode,
    what: string,
    ended: AbortSignal,
  ): Promise<T> {
    let listener: LineListener | undefined;
    const forget = (): void => {
      if (listener !== undefined) this.#listeners.delete(listener);
    };
    const heard = new Promise<T>((resolvePromise, reject) => {
      listener = {
        line: onLine(resolvePromise, reject),
        exit: (exit) => {
          reject(
            new MeshError(
              code,
              `nats-server exited (${describeExit(exit)}) while waiting for it ${what}.` +
                linesHint(exit.lastLines),
            ),
          );
        },
      };
      if (this.#exit !== undefined) listener.exit(this.#exit);
      else this.#listeners.add(listener);
    });
    ended.addEventListener("abort", forget, { once: true });
    return heard.finally(forget);
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
export function probeJetStream(
  host: string,
  port: number,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return withDeadline(({ signal: ended }) => readInfo(host, port, ended), {
    ms: deadline - Date.now(),
    ...(signal === undefined ? {} : { signal }),
    expired: () => new Error(`no INFO from ${host}:${port} in time`),
    aborted: () =>
      new MeshError(ErrorCode.ABORTED, "starting nats-server was aborted", {
        cause: signal?.reason,
      }),
  });
}

/** The server's INFO read off its client port, with JetStream on; the socket goes when `ended` aborts. */
function readInfo(host: string, port: number, ended: AbortSignal): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const socket = connectTcp({ host: dialHost(host), port });
    let received = "";
    const done = (error?: Error): void => {
      socket.destroy();
      if (error === undefined) resolvePromise();
      else reject(error);
    };
    ended.addEventListener("abort", () => socket.destroy(), { once: true });
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
export function raceExit(
  exited: Promise<ServerExit>,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  return within(
    exited.then(() => true),
    ms,
    false,
    signal === undefined ? {} : { signal },
  );
}

/** Where a client on this machine reaches a server listening on `host`. */
function dialHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "::1";
  return host;
}

/** The host part of a URL: IPv6 addresses go in brackets. */
export function urlHost(host: string): string {
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

export function linesHint(lines: readonly string[]): string {
  if (lines.length === 0) return " It printed nothing.";
  return ` Its last lines:\n${lines.slice(-15).join("\n")}`;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
