/**
 * One small logger: a function that says a line, named by the process and the part of it that
 * speaks (`mesh-controller: broker: reloaded the bus`). It is called as the `log` option every
 * part of the mesh takes, `(line) => void`, so a part hands a child of its logger to what it
 * builds without either knowing how lines are written.
 *
 * ```ts
 * const log = createLogger({ name: "mesh-controller" });
 * const broker = new Broker({ log: log.child("broker") }); // "mesh-controller: broker: …"
 * ```
 */

export interface Logger {
  /** Says one line. */
  (line: string): void;
  /** The names before each line, joined (`mesh-controller: broker`). */
  readonly scope: string;
  /** A logger whose lines are said through this one, with `name` after this one's. */
  child(name: string): Logger;
}

export interface LoggerOptions {
  /** The first name said before every line; none when the writer names the process already. */
  readonly name?: string;
  /** Where a whole line goes (the names and the line, no newline); stderr by default. */
  readonly write?: (line: string) => void;
}

/** A logger writing `<name>: <line>` (stderr by default). */
export function createLogger(options: LoggerOptions = {}): Logger {
  const write = options.write ?? ((line: string) => void process.stderr.write(`${line}\n`));
  return loggerOf(options.name === undefined ? [] : [options.name], write);
}

/** A logger over a plain `(line) => void` (what a caller passed as its `log` option). */
export function loggerFrom(log: (line: string) => void): Logger {
  return isLogger(log) ? log : loggerOf([], log);
}

function isLogger(log: (line: string) => void): log is Logger {
  return typeof (log as Partial<Logger>).child === "function";
}

function loggerOf(names: readonly string[], write: (line: string) => void): Logger {
  const prefix = names.length === 0 ? "" : `${names.join(": ")}: `;
  const logger = (line: string): void => write(`${prefix}${line}`);
  return Object.assign(logger, {
    scope: names.join(": "),
    child: (name: string) => loggerOf([...names, name], write),
  });
}
