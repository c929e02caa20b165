/** A process as the host's supervisor runs it, and where its output goes on disk. */
import { join } from "node:path";

export interface ProcessSpec {
  readonly id: string;
  readonly module: string;
  readonly name: string;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly user?: string | undefined;
  /** The environment variable (name=value) by which a restarted host recognises it. */
  readonly marker: { readonly name: string; readonly value: string };
  /**
   * Restarted at once (no delay) the first time it exits after a healthy run: a process others
   * depend on every moment (the runtime) has nothing to wait for after one crash.
   */
  readonly restartAtOnce?: boolean;
  /**
   * What code it runs (its bundle's digest): a standby booted with other code never takes over
   * (it would go on running what it loaded).
   */
  readonly code?: string;
  /**
   * Keep one more process of it booted ahead, started with these variables added and told to
   * take over with SIGUSR2 when the running one exits (standby.ts).
   */
  readonly standby?: Readonly<Record<string, string>>;
}

export function logFiles(
  root: string,
  spec: Pick<ProcessSpec, "module" | "name">,
): { folder: string; stdout: string; stderr: string } {
  const folder = join(root, "logs", spec.module);
  return {
    folder,
    stdout: join(folder, `${spec.name}.log`),
    stderr: join(folder, `${spec.name}.stderr.log`),
  };
}
