/**
 * What the benches on a whole mesh share: `mesh up` on a temporary root as a child process, the
 * CLI run beside it without blocking the simulated nodes, and a fleet of simulated nodes joined
 * through the real join path (`fleet-sim.ts`).
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { MeshBus } from "@mesh/bus";
import { askJoinToken } from "@mesh/controller";
import { SimNode } from "./fleet-sim.js";

export const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));

export interface Up {
  readonly bus: { readonly url: string };
  readonly credentials: { readonly operator: string };
}

/** `mesh up --root <root> --node bench-0 --port <port> --json` and `extra`; ready once it says so. */
export function startMesh(
  root: string,
  port: number,
  extra: readonly string[] = [],
): { up: ReturnType<typeof spawn>; ready: Promise<Up> } {
  const up = spawn(
    process.execPath,
    [CLI, "up", "--root", root, "--node", "bench-0", "--port", String(port), "--json", ...extra],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const ready = new Promise<Up>((resolve, reject) => {
    let out = "";
    up.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      try {
        resolve(JSON.parse(out) as Up);
      } catch {
        // not yet whole
      }
    });
    up.once("exit", (code) => reject(new Error(`mesh up exited ${String(code)}`)));
  });
  return { up, ready };
}

/** Stops `mesh up` (SIGINT, its own clean stop) and waits for it to be gone. */
export async function stopMesh(up: ReturnType<typeof spawn>): Promise<void> {
  if (up.exitCode !== null || up.signalCode !== null) return;
  const exited = new Promise((resolve) => up.once("exit", resolve));
  up.kill("SIGINT");
  await exited;
}

export async function waitUntil(
  test: () => boolean,
  limitMs: number,
  what: string,
): Promise<number> {
  const start = Date.now();
  while (!test()) {
    if (Date.now() - start > limitMs)
      throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

/** Runs the CLI without blocking this process: the simulated nodes keep answering meanwhile. */
export async function mesh(
  root: string,
  args: readonly string[],
): Promise<{ ms: number; out: string; code: number }> {
  const start = performance.now();
  const where = args[0] === "--version" ? [] : ["--root", root];
  const child = spawn(process.execPath, [CLI, ...args, ...where], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (err += chunk));
  const code = await new Promise<number>((r) => child.once("close", (c) => r(c ?? -1)));
  // What a failed verb said: the caller's error carries it.
  return { ms: performance.now() - start, out: code === 0 ? out : `${out}${err}`, code };
}

export interface JoinOptions {
  /** How many nodes to join. */
  readonly n: number;
  /** How many joins run at once. */
  readonly atOnce: number;
  /** No join begins after this many milliseconds. */
  readonly budgetMs: number;
  readonly heartbeatMs: number;
  /** How many times a node tries to join before it counts as failed (default 1). */
  readonly attempts?: number;
}

export interface Joined {
  readonly sims: SimNode[];
  readonly ms: number[];
  /** The join-token asks alone: the broker signs a join user and keeps it. */
  readonly tokenMs: number[];
  readonly failures: string[];
  /** The longest run of joins, in the order they began, that all succeeded. */
  readonly longestRun: number;
  readonly wallMs: number;
}

/** Joins up to `n` nodes (`sim-00000`…), `atOnce` at a time, until the budget is spent. */
export async function joinFleet(operator: MeshBus, url: string, o: JoinOptions): Promise<Joined> {
  const sims: SimNode[] = [];
  const ms: number[] = [];
  const tokenMs: number[] = [];
  const failures: string[] = [];
  const ok: boolean[] = [];
  let next = 0;
  const started = Date.now();
  const worker = async (): Promise<void> => {
    while (next < o.n && Date.now() - started < o.budgetMs) {
      const i = next++;
      const node = `sim-${String(i).padStart(5, "0")}`;
      ok[i] = false;
      for (let attempt = 1; attempt <= (o.attempts ?? 1) && ok[i] !== true; attempt++) {
        const t = performance.now();
        try {
          const { token } = await askJoinToken(operator, {}, { timeoutMs: 300_000 });
          tokenMs.push(performance.now() - t);
          sims.push(
            await SimNode.join({ servers: [url], token, node, heartbeatMs: o.heartbeatMs }),
          );
          ms.push(performance.now() - t);
          ok[i] = true;
        } catch (error) {
          failures.push(`${node} (attempt ${attempt}): ${(error as Error).message}`);
        }
      }
      if ((i + 1) % Math.max(1, Math.round(o.n / 10)) === 0)
        console.error(`  joined ${sims.length} of ${i + 1} in ${Date.now() - started} ms`);
    }
  };
  await Promise.all(Array.from({ length: o.atOnce }, worker));
  let run = 0;
  let longestRun = 0;
  for (const done of ok) {
    run = done === true ? run + 1 : 0;
    longestRun = Math.max(longestRun, run);
  }
  return { sims, ms, tokenMs, failures, longestRun, wallMs: Date.now() - started };
}

/**
 * When the last of `sims` first had `<module>@<build>` composed (or healthy), or undefined if one
 * has not; any build of the module when `build` is not given.
 */
export function lastAt(
  sims: readonly SimNode[],
  module: string,
  key: "composedAt" | "healthyAt",
  build?: string,
): number | undefined {
  const prefix = build === undefined ? `${module}@` : `${module}@${build}`;
  let last = 0;
  for (const s of sims) {
    const at = [...s[key]].find(([k]) =>
      build === undefined ? k.startsWith(prefix) : k === prefix,
    )?.[1];
    if (at === undefined) return undefined;
    last = Math.max(last, at);
  }
  return last;
}

/** The passes the controller or the assigner logged since `from` (their log lines), in ms. */
export async function passesSince(root: string, name: string, from: number): Promise<number[]> {
  return (await passLines(root, name, from)).map((p) => p.ms);
}

/** Each pass logged since `from`: its time, how many nodes it took, its account update's time. */
export async function passLines(
  root: string,
  name: string,
  from: number,
): Promise<Array<{ ms: number; nodes: number; updateMs?: number }>> {
  const text = await readFile(logFile(root, name), "utf8").catch(() => "");
  const out: Array<{ ms: number; nodes: number; updateMs?: number }> = [];
  for (const l of text.slice(from).split("\n")) {
    const m = / in (\d+) ms$/.exec(l);
    if (m === null || !/pass \d+:/.test(l)) continue;
    const nodes = Number(/: (\d+) node/.exec(l)?.[1] ?? Number.NaN);
    const update = /account update (\d+) ms/.exec(l)?.[1];
    out.push({
      ms: Number(m[1]),
      nodes,
      ...(update === undefined ? {} : { updateMs: Number(update) }),
    });
  }
  return out;
}

/** How long a process's log is now: where the passes after this moment begin. */
export const logSize = async (root: string, name: string): Promise<number> =>
  (await readFile(logFile(root, name), "utf8").catch(() => "")).length;

/**
 * Where a process of the mesh says what it does: `mesh up`'s children in `logs/mesh/`; the
 * assigner, the module mesh-assigner its host runs (decision 0190), on its stderr.
 */
function logFile(root: string, name: string): string {
  return name === "assigner"
    ? join(root, "logs", "mesh-assigner", "assigner.stderr.log")
    : join(root, "logs", "mesh", `${name}.log`);
}
