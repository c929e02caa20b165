/**
 * `mesh logs <module>`: what processes printed (stream `mesh-logs`, subjects
 * `mesh.logs.<node>.<module>`). `mesh conditions` is in conditions.ts.
 */
import { Option, type Command } from "commander";
import { readStream } from "@mesh/bus";
import { stopOnSignals } from "@mesh/kit";
import { LogLine, Stream, Subject, checkName } from "@mesh/protocol";
import { connectToMesh } from "../../find-mesh.js";
import { ExitCode, printJson } from "../../output.js";
import { act, meshVerb, wholeNumber, type MeshOptions } from "../../verb.js";

export interface LogsOptions extends MeshOptions {
  readonly node?: string;
  readonly follow?: boolean;
  readonly lines?: number;
}

export const DEFAULT_LOG_LINES = 50;

interface Line extends LogLine {
  readonly node: string;
  readonly module: string;
}

export function registerLogVerbs(program: Command): void {
  act(
    meshVerb(
      program,
      "logs",
      "A module's process output: the last lines, then with --follow each new one until Ctrl-C. With --json --follow, one JSON object per line.",
    )
      .argument("<module>")
      .option("--node <name>", "only this node")
      .option("--follow", "keep printing new lines until Ctrl-C")
      .addOption(
        new Option(
          "--lines <n>",
          `how many of the kept lines to show first (default ${DEFAULT_LOG_LINES})`,
        ).argParser(wholeNumber("--lines")),
      ),
    logsVerb,
  );
}

/**
 * Prints the last `--lines` lines, then with `--follow` each new one until Ctrl-C (SIGINT or
 * SIGTERM end it with exit 0). With `--json`, without --follow one document; with --follow one
 * JSON object per line, so a script can read them as they come.
 */
export async function logsVerb(module: string, options: LogsOptions): Promise<ExitCode> {
  checkName("module", module);
  // The first Ctrl-C (or SIGTERM) ends a follow with exit 0; a second one ends the process.
  using stopping = stopOnSignals({ name: "mesh logs", log: () => undefined });
  const stop = stopping.signal;
  const filter = `${Subject.logsPrefix}.${options.node === undefined ? "*" : checkName("node", options.node)}.${module}`;
  const keep = options.lines ?? DEFAULT_LOG_LINES;
  await using bus = await connectToMesh({ ...options, signal: stop });
  const ac = new AbortController();
  const end = () => ac.abort();
  stop.addEventListener("abort", end, { once: true });
  const tail: Line[] = [];
  const show = (line: Line): void => {
    if (options.json === true) process.stdout.write(`${JSON.stringify(line)}\n`);
    else
      process.stdout.write(
        `${line.at} ${line.node} ${line.process}${line.stream === "stderr" ? " !" : ""} ${line.line}\n`,
      );
  };
  let current = false;
  try {
    for await (const event of readStream(bus, Stream.logs, {
      filter,
      schema: LogLine,
      signal: ac.signal,
    })) {
      if (event.type === "invalid") continue;
      if (event.type === "current") {
        current = true;
        if (options.json === true && options.follow !== true) break;
        for (const line of tail) show(line);
        if (tail.length === 0 && options.json !== true)
          process.stderr.write(
            `no output of ${module}${options.node === undefined ? "" : ` on ${options.node}`} is kept${options.follow === true ? "; waiting for new lines (Ctrl-C stops)" : ""}\n`,
          );
        if (options.follow !== true) break;
        continue;
      }
      const [, , node = "", mod = module] = event.subject.split(".");
      const line: Line = { node, module: mod, ...event.value };
      if (current) show(line);
      else {
        tail.push(line);
        if (tail.length > keep) tail.shift();
      }
    }
  } finally {
    stop.removeEventListener("abort", end);
    ac.abort();
  }
  if (options.json === true && options.follow !== true)
    printJson({ ok: true, module, lines: tail });
  return ExitCode.ok;
}
