/**
 * The verb kit: how every verb of `mesh` is declared, so each group's registration sits beside
 * its implementation and speaks the same way.
 *
 * - {@link meshVerb} declares a verb that speaks to a mesh: it owns `--root`, `--credential` and
 *   `--json` (what {@link MeshOptions} carries), and {@link connect} finds the mesh from them.
 * - {@link act} runs the verb's function and makes what it returns the process's exit code
 *   ({@link ExitCode}: 0 done, 1 failed, 2 wrong command line, 3 refused). A thrown error is
 *   reported once, by `runCli`, the way the verb was asked to speak.
 * - {@link out}, {@link note} and {@link printJson} are where a verb's words go: results on stdout,
 *   progress and hints on stderr (silent under `--json`), one JSON document with `--json`.
 * - The option parsers ({@link wholeNumber}, {@link positiveNumber}, {@link portNumber}) refuse
 *   with USAGE, naming the option and an example.
 *
 * - {@link answer}, {@link answerDone} and {@link table} are how a result is printed: the JSON
 *   document or the lines, what a verb did ({@link Done}), and rows as aligned columns.
 *
 * A new verb: write `registerXVerbs(program)` in its group's folder, `commands/<group>/x.ts`, with
 * `meshVerb(...)` and `act(...)`, and add it to the list in program.ts.
 */
import type { Command } from "commander";
import type { MeshBus } from "@mesh/bus";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { connectToMesh, type FindMeshOptions } from "./find-mesh.js";
import { ExitCode, printJson } from "./output.js";

export { ExitCode, printJson };

export const ROOT_HELP = "where `mesh up` keeps the operator's credential (default ./.mesh)";
export const CREDENTIAL_HELP = "a credential file to speak with (or set MESH_CREDENTIAL)";

/** What every verb that speaks to a mesh is given: where the mesh is, and how to answer. */
export interface MeshOptions extends FindMeshOptions {
  readonly json?: boolean;
}

/** Adds `--root`, `--credential` and `--json` to a verb. */
export function meshOptions(command: Command, jsonHelp = "print the result as JSON"): Command {
  return command
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", jsonHelp);
}

/** Declares `parent <name>` as a verb that speaks to a mesh (see {@link meshOptions}). */
export function meshVerb(parent: Command, name: string, description: string): Command {
  return meshOptions(parent.command(name).description(description));
}

/**
 * Makes `run` the verb's action: commander hands the arguments, then the options; what `run`
 * returns becomes the exit code.
 */
export function act<A extends unknown[]>(
  command: Command,
  run: (...args: A) => Promise<ExitCode>,
): Command {
  return command.action(async (...args: unknown[]) => {
    process.exitCode = await run(...(args as A));
  });
}

/** Connects with the credential the verb's options find (see find-mesh.ts). */
export function connect(
  options: MeshOptions & { readonly signal?: AbortSignal },
): Promise<MeshBus> {
  return connectToMesh(options);
}

/** A line of the verb's result, on stdout. */
export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** A line of progress or a hint, on stderr; silent when the verb answers in JSON. */
export function note(options: { readonly json?: boolean }, line: string): void {
  if (options.json !== true) process.stderr.write(`${line}\n`);
}

/** Either the JSON document (with `ok: true`) or the lines, the way the verb was asked. */
export function answer(
  options: { readonly json?: boolean },
  json: Record<string, unknown>,
  lines: () => readonly string[],
): ExitCode {
  if (options.json === true) printJson({ ok: true, ...json });
  else for (const line of lines()) out(line);
  return ExitCode.ok;
}

/** What a verb did on a bus: its line, and its JSON answer (without `ok`). */
export interface Done {
  readonly message: string;
  readonly result: Readonly<Record<string, unknown>>;
}

/** What a verb did ({@link Done}), answered the way the verb was asked (see {@link answer}). */
export function answerDone(options: { readonly json?: boolean }, done: Done): ExitCode {
  return answer(options, done.result, () => [done.message]);
}

function numberOption(
  option: string,
  accept: (n: number) => boolean,
  what: string,
  example: string,
): (value: string) => number {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isSafeInteger(n) || !accept(n)) {
      throw new MeshError(
        ErrorCode.USAGE,
        `${option} ${JSON.stringify(value)} is not ${what}; e.g. ${option} ${example}`,
      );
    }
    return n;
  };
}

/** A parser for an option that takes a whole number from 0 up. */
export const wholeNumber = (option: string, example = "100"): ((value: string) => number) =>
  numberOption(option, (n) => n >= 0, "a whole number", example);

/** The most milliseconds a timer waits (Node's timers take 2^31 - 1; more fires at once). */
export const MAX_TIMER_MS = 2_147_483_647;

/** A parser for an option that takes a whole number above 0 (`max` bounds it, inclusive). */
export const positiveNumber = (
  option: string,
  example: string,
  max = Number.MAX_SAFE_INTEGER,
): ((value: string) => number) =>
  numberOption(
    option,
    (n) => n > 0 && n <= max,
    max === Number.MAX_SAFE_INTEGER ? "a whole number above 0" : `a whole number from 1 to ${max}`,
    example,
  );

/** A parser for a port option; `0` (any free port) only when `anyFree`. */
export const portNumber = (option: string, anyFree = false): ((value: string) => number) =>
  numberOption(
    option,
    (n) => n >= (anyFree ? 0 : 1) && n <= 65535,
    `a port; give a whole number from ${anyFree ? "0 (any free one)" : "1"} to 65535`,
    "4222",
  );

/** Rows as aligned columns under a header, indented by two; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  // A loop, not Math.max(...rows): a spread of 200,000 rows overflows the call stack.
  const widths = header.map((h) => h.length);
  for (const r of rows)
    for (let i = 0; i < widths.length; i++)
      widths[i] = Math.max(widths[i] ?? 0, (r[i] ?? "").length);
  const line = (cells: readonly string[]) =>
    `  ${cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")}`.trimEnd();
  const out = [line(header.map((h) => h.toUpperCase()))];
  for (const r of rows) out.push(line(r));
  return out;
}
