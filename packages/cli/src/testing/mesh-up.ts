/**
 * `mesh up` as a child process for tests: started on a free port in its own root, its JSON report
 * awaited, and stopped with Ctrl-C — then anything still running under the root (the host's
 * processes, say) is killed by pid, also when the test failed half-way.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Env } from "@mesh/protocol";
import { deadline, freePort, processesNaming, reapWithMe } from "@mesh/bus/testing";
import { MESH_MAIN, runMesh, startMesh, type MeshProcess } from "./run-mesh.js";

export interface MeshUpReport {
  readonly root: string;
  readonly bus: { readonly url: string; readonly pid: number };
  readonly credentials: { readonly operator: string };
  readonly processes: Record<string, number>;
  /** Where delivery's parts run and each part's build (decision 0190). */
  readonly delivery?: { readonly node: string; readonly parts: Record<string, string> };
  readonly view?: string;
}

export interface MeshUp {
  readonly root: string;
  readonly report: MeshUpReport;
  readonly child: ChildProcess;
  /** Resolves with `mesh up`'s exit code once it has exited. */
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

export interface StartMeshUpOptions {
  readonly root: string;
  readonly node: string;
  /** The command that is `mesh`: the built CLI by default. */
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** The bus's port (a free one by default): the same again keeps joined nodes' credentials good. */
  readonly port?: number;
}

export async function startMeshUp(options: StartMeshUpOptions): Promise<MeshUp> {
  const port = options.port ?? (await freePort());
  const [file, ...pre] = options.command ?? [process.execPath, MESH_MAIN];
  const child = spawn(
    file as string,
    [
      ...pre,
      "up",
      "--root",
      options.root,
      "--port",
      String(port),
      "--node",
      options.node,
      "--json",
      ...(options.args ?? []),
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, [Env.credential]: "", ...options.env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    },
  );
  // Stopped with Ctrl-C, and everything under its root after, also when the test process is
  // killed before its after() runs.
  reapWithMe(child.pid, { signal: "SIGINT", group: false, root: options.root });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) child.kill("SIGINT");
    await deadline(exited, 120_000, "mesh up to stop").catch(() => child.kill("SIGKILL"));
    for (const pid of await processesNaming(options.root)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  };
  let out = "";
  let err = "";
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  try {
    const report = await deadline(
      new Promise<MeshUpReport>((resolve, reject) => {
        child.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          try {
            resolve(JSON.parse(out) as MeshUpReport);
          } catch {
            // not the whole document yet
          }
        });
        void exited.then((code) =>
          reject(new Error(`mesh up exited ${String(code)}: ${out}${err}`)),
        );
      }),
      300_000,
      "mesh up to be up",
    );
    return { root: options.root, report, child, exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A node joined to a {@link MeshUp} from a root of its own; `stop` ends it and its processes. */
export interface JoinedNode {
  readonly node: string;
  readonly root: string;
  readonly join: MeshProcess;
  stop(): Promise<void>;
}

/**
 * `mesh join <bus> --token T --node N --root R` in the foreground, as a user types it on another
 * machine (here: another root on this one); resolves once it says its host runs.
 */
export async function joinMeshUp(
  mesh: MeshUp,
  options: {
    readonly node: string;
    readonly root: string;
    /** More arguments of `mesh join` (`--heartbeat-ms 2000`, say). */
    readonly args?: readonly string[];
  },
): Promise<JoinedNode> {
  const made = await runMesh(["join-token", "--root", mesh.root, "--json"]);
  if (made.code !== 0) throw new Error(`mesh join-token failed: ${made.stdout}${made.stderr}`);
  const { token } = JSON.parse(made.stdout) as { token: string };
  const join = startMesh([
    ...["join", mesh.report.bus.url, "--token", token],
    ...["--node", options.node, "--root", options.root],
    // Ctrl-C stops the node's processes too (a host under a supervisor leaves them).
    "--stop-processes-on-exit",
    "--json",
    ...(options.args ?? []),
  ]);
  const stop = async (): Promise<void> => {
    try {
      process.kill(join.pid, "SIGINT");
    } catch {
      // it ended already
    }
    await join.ended(60_000).catch(() => join[Symbol.asyncDispose]());
    for (const pid of await processesNaming(options.root)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  };
  try {
    await join.stdoutWhen((out) => /"running":\s*true/.test(out), 120_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { node: options.node, root: options.root, join, stop };
}
