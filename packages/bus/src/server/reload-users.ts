/**
 * Rewriting the users list of an embedded nats-server that ANOTHER process started (the bus is a
 * child of `mesh up`; the controller, its own process, owns the users). The server's folder holds
 * what this needs: the options the config was rendered from (`nats-server.options.json`, written
 * at start), the pid file, and the log the starting process appends the server's output to.
 *
 * The reload is the one docs/nats.md §2 verified: rewrite the file, SIGHUP the pid, and wait for
 * `Reloaded server configuration` (or the refusal) in the log, after the offset it had before the
 * signal. Nothing restarts; connections of unchanged users stay up.
 *
 * A cluster that `mesh up --cluster N` runs keeps one such folder per server (`<dir>/s1` …): each
 * server reads only its own file, so each is rewritten and signalled. A server that is down at
 * that moment is skipped; its keeper starts it again with the users list on disk.
 */
import { open, readdir, readFile, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";
import { delay, writeFileAtomic } from "@mesh/kit";
import { ServerFiles, type ServerBase } from "./embedded-server.js";
import { AuthMode, renderServerConfig, type ServerUser } from "./server-config.js";

export interface ReloadServerUsersOptions {
  /** The server's folder, as given to EmbeddedServer.start (`<root>/bus` for `mesh up`). */
  readonly dir: string;
  readonly users: readonly ServerUser[];
  /** How long to wait for the server to say it reloaded; default 10 s. */
  readonly timeoutMs?: number;
  /** A server that does not run is skipped (`down`) instead of refused. */
  readonly skipIfDown?: boolean;
  readonly signal?: AbortSignal;
}

/** What a reload did: the server took the list, already ran it, or was not running. */
export type ReloadOutcome = "reloaded" | "unchanged" | "down";

/** What a users list can be applied through: an EmbeddedServer, the test harness's, or a folder. */
export interface UsersSink {
  setUsers(users: readonly ServerUser[], options?: { signal?: AbortSignal }): Promise<void>;
}

const RELOADED_LINE = "Reloaded server configuration";
const RELOAD_FAILED = /Failed to reload server configuration:?\s*(.*)$/;
/** How often the log is read while waiting; a reload takes 2–200 ms (docs/nats.md §2). */
const POLL_MS = 10;

/**
 * The server folders under `dir`: `dir` itself when a server was started there, else each
 * subfolder a server of a cluster was started in, by name.
 */
export async function serverFolders(dir: string): Promise<string[]> {
  const has = (folder: string) =>
    stat(join(folder, ServerFiles.options)).then(
      () => true,
      () => false,
    );
  if (await has(dir)) return [dir];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const found: string[] = [];
  for (const entry of entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()) {
    if (await has(join(dir, entry))) found.push(join(dir, entry));
  }
  return found;
}

/**
 * A UsersSink for the server (or every server of the cluster) whose folder is `dir`, whichever
 * process started it. With several servers, one that is down is skipped; the list must reach at
 * least one that runs.
 */
export function serverFolderSink(dir: string): UsersSink {
  let queue: Promise<unknown> = Promise.resolve();
  const apply = async (users: readonly ServerUser[], signal?: AbortSignal): Promise<void> => {
    const folders = await serverFolders(dir);
    if (folders.length <= 1) {
      await reloadServerUsers({ dir: folders[0] ?? dir, users, ...(signal ? { signal } : {}) });
      return;
    }
    const outcomes: ReloadOutcome[] = [];
    for (const folder of folders) {
      outcomes.push(
        await reloadServerUsers({
          dir: folder,
          users,
          skipIfDown: true,
          ...(signal ? { signal } : {}),
        }),
      );
    }
    if (outcomes.every((o) => o === "down")) {
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `no server of the bus in ${dir} runs (${folders.length} folders), so none took the new users list; ` +
          "it is on disk and every server starts with it — start the mesh (mesh up) again",
        { path: dir },
      );
    }
  };
  return {
    setUsers(users, options = {}) {
      // One reload at a time: two interleaved rewrites could confirm each other's reload.
      const run = queue.then(() => apply(users, options.signal));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

/**
 * Renders the config with `users` from the options the running server was started with, writes
 * it atomically, SIGHUPs the server and resolves once its log says it reloaded. A refusal puts the
 * previous file back and throws SERVER_RELOAD_FAILED with the server's words.
 */
export async function reloadServerUsers(options: ReloadServerUsersOptions): Promise<ReloadOutcome> {
  const { dir, signal } = options;
  const configPath = join(dir, ServerFiles.config);
  const { auth, ...base } = await readBase(dir);
  if (auth === AuthMode.accounts) {
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `the bus in ${dir} runs the mesh's accounts, not a users list: its users are signed JWTs and need no reload — start the controller in accounts mode (it reads ${ServerFiles.options})`,
      { path: join(dir, ServerFiles.options) },
    );
  }
  let pid: number;
  try {
    pid = await runningPid(dir, configPath);
  } catch (error) {
    if (options.skipIfDown === true) return "down";
    throw error;
  }
  // Rendering first: a list the mesh cannot write leaves the file and the server untouched.
  const text = renderServerConfig({ ...base, users: options.users });
  const logPath = join(dir, ServerFiles.log);
  const timeoutMs = options.timeoutMs ?? 10_000;
  // A reload the server has not answered yet gets its verdict first: taken as this one's, it
  // would say the server runs this list while it still reloads the one before.
  const late = await settleUnanswered(dir, logPath, pid, timeoutMs, signal);
  const previous = await readFile(configPath, "utf8");
  // The server runs what its file says (it was started with it, or reloaded with it, and a
  // refused reload puts the previous file back), so the same list needs no reload. Each reload
  // leaves JetStream without a responder for a moment; the one a controller asks for at start
  // is usually of the list the bus was started with. A late refusal left its file in place.
  const lateRefusal = late !== undefined && RELOAD_FAILED.test(late);
  if (text === previous && !lateRefusal) return "unchanged";
  const offset = await stat(logPath).then(
    (s) => s.size,
    () => 0,
  );
  await writeFileAtomic(configPath, text);
  try {
    process.kill(pid, "SIGHUP");
  } catch (error) {
    await writeFileAtomic(configPath, previous);
    if (options.skipIfDown === true) return "down";
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `could not signal nats-server (pid ${pid}) to reload: ${(error as Error).message}; is it running, and as this user?`,
      { path: configPath, cause: error },
    );
  }
  let line: string;
  try {
    line = await waitForLogLine(logPath, offset, timeoutMs, signal);
  } catch (error) {
    // The server may still answer; the next reload waits for that verdict before its own.
    await writeFileAtomic(join(dir, UNANSWERED_FILE), `${JSON.stringify({ pid, offset })}\n`);
    throw error;
  }
  const failed = RELOAD_FAILED.exec(line);
  if (failed !== null) {
    await writeFileAtomic(configPath, previous);
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `nats-server refused the new users list and keeps running the previous one: ${failed[1] ?? line}. ` +
        "The config that failed was not kept; fix the users or permissions it names and set them again.",
      { path: configPath },
    );
  }
  return "reloaded";
}

/**
 * The options the bus in `dir` was started with (users or accounts aside), and its mode; of its
 * first server when `dir` holds a cluster's folders (every server runs the same mode).
 */
export async function readServerBase(dir: string): Promise<ServerBase> {
  return readBase((await serverFolders(dir))[0] ?? dir);
}

async function readBase(dir: string): Promise<ServerBase> {
  const path = join(dir, ServerFiles.options);
  try {
    const value = JSON.parse(await readFile(path, "utf8")) as ServerBase;
    if (typeof value.serverName !== "string" || typeof value.storeDir !== "string") {
      throw new Error("it lacks serverName or storeDir");
    }
    return value;
  } catch (error) {
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `cannot read the options the bus in ${dir} was started with (${path}: ${(error as Error).message}); ` +
        "restart the bus with this version of mesh (it writes them at start), then try again",
      { path, cause: error },
    );
  }
}

/** The pid of the server running on this folder's config; refuses a pid that is something else. */
async function runningPid(dir: string, configPath: string): Promise<number> {
  const pidPath = join(dir, ServerFiles.pid);
  const pid = Number((await readFile(pidPath, "utf8").catch(() => "")).trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) {
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `no running bus in ${dir}: ${pidPath} is missing or empty; start the mesh (mesh up) first`,
      { path: pidPath },
    );
  }
  // A pid that was reused by another process must not get our SIGHUP (Linux: /proc says whose).
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => undefined);
  if (cmdline !== undefined && !cmdline.split("\0").includes(configPath)) {
    throw new MeshError(
      ErrorCode.SERVER_RELOAD_FAILED,
      `the pid file ${pidPath} names process ${pid}, which is not nats-server on ${configPath}; the bus is not running — start it again`,
      { path: pidPath },
    );
  }
  return pid;
}

/**
 * A reload whose verdict did not come in time, kept in the server's folder: the server's pid and
 * the log's size when it was signalled. nats-server answers every SIGHUP it takes, in order, with
 * one verdict line; the next reload (of this process or a controller started again) waits for
 * that late verdict before it signals, so it never takes it for its own.
 */
const UNANSWERED_FILE = "nats-server.reload-unanswered.json";

/**
 * Waits for the verdict of the reload this folder still owes, if any, and returns it. A server
 * started since (another pid) owes nothing. One that does not answer within `timeoutMs` is not signalled again
 * (its reload in progress read the file before this list): SERVER_RELOAD_FAILED, try later.
 */
async function settleUnanswered(
  dir: string,
  logPath: string,
  pid: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const path = join(dir, UNANSWERED_FILE);
  const owed = await readFile(path, "utf8")
    .then((text) => JSON.parse(text) as { pid?: unknown; offset?: unknown } | null)
    .catch(() => undefined);
  if (owed === undefined) return undefined;
  let verdict: string | undefined;
  if (owed?.pid === pid && typeof owed.offset === "number") {
    try {
      verdict = await waitForLogLine(logPath, owed.offset, timeoutMs, signal);
    } catch (error) {
      if (isMeshError(error, ErrorCode.ABORTED)) throw error;
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `nats-server (pid ${pid}) has not yet answered the reload asked before this one (nothing in ${logPath} within ${timeoutMs} ms), so it is not asked again; ` +
          "the new users list applies once it has — try again in a moment",
        { path: logPath, cause: error },
      );
    }
  }
  await unlink(path).catch(() => undefined);
  return verdict;
}

/** The first reload verdict the log gets after `offset`. */
async function waitForLogLine(
  logPath: string,
  offset: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let position = offset;
  let partial = "";
  for (;;) {
    if (signal?.aborted === true) {
      throw new MeshError(ErrorCode.ABORTED, "waiting for nats-server to reload was aborted", {
        cause: signal.reason,
      });
    }
    const handle = await open(logPath, "r").catch(() => undefined);
    if (handle !== undefined) {
      try {
        const { size } = await handle.stat();
        if (size > position) {
          const buffer = Buffer.alloc(size - position);
          await handle.read(buffer, 0, buffer.length, position);
          position = size;
          const lines = (partial + buffer.toString("utf8")).split("\n");
          partial = lines.pop() ?? "";
          const verdict = lines.find((l) => l.includes(RELOADED_LINE) || RELOAD_FAILED.test(l));
          if (verdict !== undefined) return verdict;
        }
      } finally {
        await handle.close();
      }
    }
    if (Date.now() >= deadline) {
      throw new MeshError(
        ErrorCode.SERVER_RELOAD_FAILED,
        `nats-server did not confirm the reload within ${timeoutMs} ms (nothing in ${logPath}); ` +
          "the new users list is in its config and applies at the latest on its next start — check the log",
        { path: logPath },
      );
    }
    await delay(POLL_MS);
  }
}
