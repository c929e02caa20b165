/**
 * `mesh` on random argument vectors: every run ends with an exit code a script can rely on (0
 * done, 1 failed, 2 usage, 3 refused), a coded line when it fails, and never a stack trace. The
 * verbs that run until stopped (up, view, host, the daemons, join) are left out; their flags are
 * checked by the same parsers. Runs in a folder with no mesh, so nothing reaches a bus that
 * happens to run on this machine.
 *
 * Most vectors run in this process through `runCli` (what main.js calls), with its output
 * captured: a spawned node costs seconds on a busy machine. A few run the built command itself,
 * so main.js's own handling is covered too.
 *
 * FUZZ_SEED=<n> replays a run; FUZZ_RUNS=<n> and FUZZ_SPAWNED=<n> change how many are tried.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { buildProgram, runCli } from "../program.js";
import { runMesh, type MeshRun } from "../testing/run-mesh.js";

const LONG_RUNNING = new Set([
  "up",
  "view",
  "host",
  "controller",
  "indexer",
  "builder",
  "assigner",
  "join",
  "mcp",
]);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 1000);
const SPAWNED = Number(process.env["FUZZ_SPAWNED"] ?? 12);
const SEED = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31);
const PARALLEL = 4;

/** Each verb (with its sub-verbs) and the flags it takes, read from the program itself. */
function verbs(): { words: string[]; flags: string[] }[] {
  const out: { words: string[]; flags: string[] }[] = [];
  for (const command of buildProgram().commands) {
    if (LONG_RUNNING.has(command.name())) continue;
    const flags = command.options.map((o) => o.long ?? "").filter((f) => f !== "");
    if (command.commands.length === 0) out.push({ words: [command.name()], flags });
    for (const sub of command.commands) {
      out.push({
        words: [command.name(), sub.name()],
        flags: sub.options.map((o) => o.long ?? "").filter((f) => f !== ""),
      });
    }
  }
  return out;
}

/** Words that have broken parsers before, and a few of every kind. */
const NASTY = [
  "",
  "-",
  "--",
  "all",
  "ALL",
  "../../etc/passwd",
  "/dev/null",
  "/dev/zero",
  "1e12",
  "-1",
  "0",
  "NaN",
  "Infinity",
  "9007199254740993",
  "{",
  '{"a":',
  "[]",
  "null",
  "hello/greet",
  "a/b/c",
  "/",
  "x".repeat(5000),
  "é∂ƒ\u001b[31m\u0007",
  "--json",
  "--help",
  "--root",
  "--credential",
  "--node",
  "--timeout",
];

function argvArbitrary(list: { words: string[]; flags: string[] }[]): fc.Arbitrary<string[]> {
  const word = fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
      { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
      { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,70}$/) },
      { weight: 1, arbitrary: fc.integer().map(String) },
    )
    .map((w) => w.replaceAll("\u0000", "")); // an argv string cannot hold a NUL
  const known = fc.constantFrom(...list);
  return fc.oneof(
    { weight: 1, arbitrary: fc.array(word, { maxLength: 6 }) },
    {
      weight: 6,
      arbitrary: known.chain((verb) =>
        fc
          .array(
            fc.oneof(
              word.map((w) => [w]),
              fc.tuple(fc.constantFrom(...verb.flags, "--json"), word),
              fc.constantFrom(...verb.flags, "--json").map((f) => [f]),
            ),
            { maxLength: 5 },
          )
          .map((parts) => [...verb.words, ...parts.flat()]),
      ),
    },
  );
}

const STACK = /^\s+at .+(:\d+:\d+\)?|\(native\))$|node:internal|\[INTERNAL\]/m;

describe("the mesh command on random arguments", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-argv-fuzz-"));
    await writeFile(join(dir, "mesh.yaml"), "module: [\n");
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const check = (argv: string[], run: MeshRun, failures: string[]): void => {
    const coded =
      run.code === 0 ||
      /\[[A-Z_]+\]|"code":\s*"[A-Z_]+"|^error: |Usage:/m.test(run.stderr + run.stdout);
    if (![0, 1, 2, 3].includes(run.code ?? -1) || STACK.test(run.stderr) || !coded) {
      failures.push(`${JSON.stringify(argv)} → exit ${run.code}\n${run.stderr.slice(0, 600)}`);
    }
  };

  it(`${RUNS} random argument vectors in process: exit 0-3, a coded line on failure, no stack trace`, async () => {
    // secret set reads stdin, which this process shares with the test runner: spawned only.
    const list = verbs().filter((v) => v.words.join(" ") !== "secret set");
    const samples = fc.sample(argvArbitrary(list), { numRuns: RUNS, seed: SEED });
    const failures: string[] = [];
    const byCode = new Map<number | null, number>();
    const started = performance.now();
    const home = process.cwd();
    process.chdir(dir);
    try {
      for (const argv of samples) {
        const run = await inProcess(argv);
        byCode.set(run.code, (byCode.get(run.code) ?? 0) + 1);
        check(argv, run, failures);
      }
    } finally {
      process.chdir(home);
    }
    console.log(
      `argv fuzz in process: ${samples.length} runs (seed ${SEED}) in ${((performance.now() - started) / 1000).toFixed(1)} s; exit codes ${JSON.stringify([...byCode].sort())}`,
    );
    assert.deepEqual(failures, [], `replay with FUZZ_SEED=${SEED}`);
  });

  it(`${SPAWNED} random argument vectors through the built command`, async () => {
    const samples = fc.sample(argvArbitrary(verbs()), { numRuns: SPAWNED, seed: SEED + 1 });
    const failures: string[] = [];
    const started = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < samples.length) {
        const argv = samples[next++] as string[];
        const run = await runMesh(argv, {
          env: { MESH_DEBUG: "", HOME: dir },
          deadlineMs: 60_000,
          cwd: dir,
        });
        check(argv, run, failures);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    console.log(
      `argv fuzz spawned: ${samples.length} runs (seed ${SEED + 1}) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    assert.deepEqual(failures, [], `replay with FUZZ_SEED=${SEED}`);
  });
});

/** Runs `mesh <argv>` as main.js does, in this process, capturing what it writes. */
async function inProcess(argv: string[]): Promise<MeshRun> {
  let stdout = "";
  let stderr = "";
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const capture =
    (into: (text: string) => void) =>
    (chunk: unknown, ...rest: unknown[]): boolean => {
      into(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"));
      const done = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      done?.();
      return true;
    };
  process.stdout.write = capture((t) => (stdout += t));
  process.stderr.write = capture((t) => (stderr += t));
  process.exitCode = undefined;
  let code: number | null;
  try {
    code = await runCli(["node", "mesh", ...argv]);
  } catch (error) {
    stderr += `runCli threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
    code = null;
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = undefined;
  }
  return { code, stdout, stderr };
}
