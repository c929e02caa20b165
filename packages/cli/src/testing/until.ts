/**
 * The wait of the end-to-end tests: polls a probe until it gives something, within a deadline
 * (stretched for loaded machines as every test deadline is). When the deadline passes the
 * polling stops, and the failure carries what the mesh says about itself (`explain`, usually
 * `mesh status`), so a run that timed out on a CI machine says why without a rerun.
 */
import { deadline } from "@mesh/bus/testing";
import { runMesh } from "./run-mesh.js";

export interface UntilOptions {
  /** How often to probe (ms); 250 by default. */
  readonly everyMs?: number;
  /** What to add to the failure: the mesh's own account of itself. */
  readonly explain?: () => Promise<string>;
}

export async function until<T>(
  probe: () => Promise<T | undefined>,
  ms: number,
  what: string,
  options: UntilOptions = {},
): Promise<T> {
  let stopped = false;
  try {
    return await deadline(
      (async () => {
        while (!stopped) {
          const value = await probe();
          if (value !== undefined) return value;
          await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 250));
        }
        throw new Error("stopped");
      })(),
      ms,
      what,
    );
  } catch (error) {
    stopped = true;
    if (options.explain === undefined) throw error;
    const account = await options.explain().catch((e: unknown) => `(no account: ${String(e)})`);
    throw new Error(`${(error as Error).message}\n--- the mesh's account ---\n${account}`, {
      cause: error,
    });
  }
}

/** `mesh status` of a root as text, for {@link UntilOptions.explain}. */
export async function statusOf(root: string): Promise<string> {
  const run = await runMesh(["status", "--root", root]);
  return `${run.stdout}${run.stderr}`;
}
