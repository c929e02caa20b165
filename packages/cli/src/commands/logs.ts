/**
 * `mesh logs <module>` and `mesh conditions`: what processes printed (stream `mesh-logs`, subjects
 * `mesh.logs.<node>.<module>`) and what modules said (stream `mesh-conditions`).
 */
import { readStream } from "@mesh/bus";
import { LogLine, Stream, Subject, checkName } from "@mesh/protocol";
import { connectToMesh } from "../find-mesh.js";
import { ExitCode, printJson } from "../output.js";
import type { VerbOptions } from "./delivery.js";
import { readConditions, table } from "./status.js";

export interface LogsOptions extends VerbOptions {
  readonly node?: string;
  readonly follow?: boolean;
  readonly lines?: number;
}

export const DEFAULT_LOG_LINES = 50;

interface Line extends LogLine {
  readonly node: string;
  readonly module: string;
}

/**
 * Prints the last `--lines` lines, then with `--follow` each new one until Ctrl-C (SIGINT or
 * SIGTERM end it with exit 0). With `--json`, without --follow one document; with --follow one
 * JSON object per line, so a script can read them as they come.
 */
export async function logsVerb(
  module: string,
  options: LogsOptions,
  stop: AbortSignal = stopOnSignals(),
): Promise<ExitCode> {
  checkName("module", module);
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

export interface ConditionsOptions extends VerbOptions {
  readonly module?: string;
}

export async function conditionsVerb(options: ConditionsOptions): Promise<ExitCode> {
  if (options.module !== undefined) checkName("module", options.module);
  await using bus = await connectToMesh(options);
  const conditions = await readConditions(
    bus,
    options.module === undefined ? {} : { module: options.module },
  );
  if (options.json === true) {
    printJson({ ok: true, conditions });
    return ExitCode.ok;
  }
  if (conditions.length === 0) {
    process.stdout.write(
      `no conditions${options.module === undefined ? "" : ` of ${options.module}`} are kept\n`,
    );
    return ExitCode.ok;
  }
  const rows = table(
    ["at", "level", "module", "name", "node", "message"],
    conditions.map((c) => [c.at, c.level, c.module, c.name, c.node ?? "-", c.message]),
  );
  process.stdout.write(`${rows.join("\n")}\n`);
  return ExitCode.ok;
}

/** Aborts on Ctrl-C or SIGTERM: a follow ends cleanly, with its connection closed. */
function stopOnSignals(): AbortSignal {
  const ac = new AbortController();
  const stop = () => ac.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return ac.signal;
}
