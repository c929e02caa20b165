/**
 * Runs the built `mesh` command as a child process, the way an operator or a script does, for the
 * CLI's tests: what it printed and how it exited. The environment's `MESH_CREDENTIAL` is cleared
 * so each test names its mesh itself.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Env } from "@mesh/protocol";
import { deadline, reapWithMe } from "@mesh/bus/testing";

/** The CLI's entry file, as built. */
export const MESH_MAIN = fileURLToPath(new URL("../main.js", import.meta.url));

export interface MeshRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunMeshOptions {
  /** Written to the command's stdin, which is then closed; no stdin at all when omitted. */
  readonly input?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** How long the command may take before the test fails (stretched by the harness's factor). */
  readonly deadlineMs?: number;
  /** The folder it runs in (default: the test's). */
  readonly cwd?: string;
  /** The network namespace it runs in (`ip netns exec`, which execs: the pid is the command's). */
  readonly netns?: string;
}

/** The command and arguments that run `mesh args…`, in a namespace when one is named. */
function meshArgv(args: readonly string[], netns: string | undefined): [string, string[]] {
  return netns === undefined
    ? [process.execPath, [MESH_MAIN, ...args]]
    : ["ip", ["netns", "exec", netns, process.execPath, MESH_MAIN, ...args]];
}

export function runMesh(args: readonly string[], options: RunMeshOptions = {}): Promise<MeshRun> {
  return deadline(
    new Promise<MeshRun>((resolve, reject) => {
      const child = spawn(...meshArgv(args, options.netns), {
        env: { ...process.env, [Env.credential]: "", MESH_ROOT: "", ...options.env },
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, stdout, stderr }));
      reapWithMe(child.pid, { group: false, graceMs: 5_000 });
      if (options.input !== undefined) child.stdin?.end(options.input);
    }),
    options.deadlineMs ?? 60_000,
    `mesh ${args.join(" ")}`,
  );
}

/**
 * `mesh <args> --root <root> --json`, which must succeed: its answer. A failure throws with what
 * it printed.
 */
export async function meshJsonAt(
  root: string,
  args: readonly string[],
  stdin?: string,
): Promise<Record<string, unknown>> {
  const run = await runMesh(
    [...args, "--root", root, "--json"],
    stdin === undefined ? {} : { input: stdin },
  );
  if (run.code !== 0) {
    throw new Error(
      `mesh ${args.join(" ")} exited ${String(run.code)}: ${run.stdout}${run.stderr}`,
    );
  }
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** A `mesh` command left running (a `--follow`, a foreground host), stopped by its pid. */
export interface MeshProcess extends AsyncDisposable {
  readonly pid: number;
  /** What it printed so far. */
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves once `pattern` appears on stderr (within the deadline). */
  stderrShows(pattern: RegExp, deadlineMs?: number): Promise<void>;
  /** Resolves with stdout once `done(stdout)` says it is whole (within the deadline). */
  stdoutWhen(done: (stdout: string) => boolean, deadlineMs?: number): Promise<string>;
  /** Resolves with how it ended (within the deadline). */
  ended(deadlineMs?: number): Promise<MeshRun>;
}

export function startMesh(args: readonly string[], options: RunMeshOptions = {}): MeshProcess {
  const child = spawn(...meshArgv(args, options.netns), {
    env: { ...process.env, [Env.credential]: "", MESH_ROOT: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // A foreground host's processes name its root: they go after it.
  const root = args[args.indexOf("--root") + 1];
  reapWithMe(child.pid, {
    group: false,
    graceMs: 10_000,
    ...(args.includes("--root") && root !== undefined ? { root } : {}),
  });
  let stdout = "";
  let stderr = "";
  const watchers = new Set<() => void>();
  const changed = () => {
    for (const w of watchers) w();
  };
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    changed();
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    changed();
  });
  const closed = new Promise<MeshRun>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      changed();
      resolve({ code, stdout, stderr });
    });
  });
  const what = `mesh ${args.join(" ")}`;
  const until = (done: () => boolean, deadlineMs: number, doing: string): Promise<void> =>
    deadline(
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (done()) {
            watchers.delete(check);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            watchers.delete(check);
            reject(new Error(`${what} ended before ${doing}: ${stdout}${stderr}`));
          }
        };
        watchers.add(check);
        check();
      }),
      deadlineMs,
      `${what} ${doing}`,
    );
  return {
    pid: child.pid ?? -1,
    stdout: () => stdout,
    stderr: () => stderr,
    stderrShows: (pattern, deadlineMs = 30_000) =>
      until(() => pattern.test(stderr), deadlineMs, `printing ${String(pattern)} on stderr`),
    stdoutWhen: (done, deadlineMs = 30_000) =>
      until(() => done(stdout), deadlineMs, "printing its answer on stdout").then(() => stdout),
    ended: (deadlineMs = 30_000) => deadline(closed, deadlineMs, `${what} to end`),
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await closed.catch(() => undefined);
      }
    },
  };
}
