/**
 * Runs the built `mesh` command as a child process, the way an operator or a script does, for the
 * CLI's tests: what it printed and how it exited. The environment's `MESH_CREDENTIAL` is cleared
 * so each test names its mesh itself.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Env } from "@mesh/protocol";
import { deadline } from "@mesh/bus/testing";

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
}

export function runMesh(args: readonly string[], options: RunMeshOptions = {}): Promise<MeshRun> {
  return deadline(
    new Promise<MeshRun>((resolve, reject) => {
      const child = spawn(process.execPath, [MESH_MAIN, ...args], {
        env: { ...process.env, [Env.credential]: "", ...options.env },
        stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, stdout, stderr }));
      if (options.input !== undefined) child.stdin?.end(options.input);
    }),
    options.deadlineMs ?? 60_000,
    `mesh ${args.join(" ")}`,
  );
}
