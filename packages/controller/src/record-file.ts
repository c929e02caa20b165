/**
 * Records kept by key on disk (the broker's users, the join tokens) at the cost of what changed,
 * not of how many there are: a snapshot (`<name>.json`, the file's shape as it always was,
 * written atomically) and a journal beside it (`<name>.json.journal`, one JSON line per record
 * set or deleted, appended and synced). Rewriting the whole file at every change cost the
 * controller most of its time at 1,000 nodes (a 4 MB users file written three times a join,
 * issue 13). The journal is folded into the snapshot when it outgrows the records, and at open.
 *
 * A crash mid-append leaves at most a torn last line: it is dropped (its change was never
 * acknowledged), and the open that finds it writes a fresh snapshot.
 */
import { readFile, unlink } from "node:fs/promises";
import { z } from "zod";
import { appendDurably } from "@mesh/kit";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { readJsonFile, writeJsonFile } from "./files.js";

export interface RecordFileOptions<T> {
  /** The snapshot's path; the journal is beside it. */
  readonly path: string;
  /** The records of a snapshot's JSON (throws a MeshError naming the file when it is not one). */
  readonly fromSnapshot: (raw: unknown) => readonly T[];
  /** The snapshot's JSON for the records. */
  readonly toSnapshot: (records: readonly T[]) => unknown;
  /** One record of a journal line (throws when it is not one). */
  readonly parseRecord: (raw: unknown) => T;
  readonly keyOf: (record: T) => string;
  /** Journal lines past the records' count before a new snapshot; default 1,000. */
  readonly slack?: number;
}

/**
 * The options of a file whose snapshot is `{ version: 1, <list>: [record…] }`, its records sorted
 * by their key; a snapshot of another shape is INVALID_VALUE with what `refusal` makes of the
 * schema's first issue (what to do about it).
 */
export function versionOneFile<T>(options: {
  readonly path: string;
  readonly list: string;
  readonly record: z.ZodType<T>;
  readonly keyOf: (record: T) => string;
  readonly refusal: (issue: string) => string;
}): RecordFileOptions<T> {
  const { path, list, record, keyOf } = options;
  const Snapshot = z.object({ version: z.literal(1), [list]: z.array(record) }).strict();
  return {
    path,
    fromSnapshot: (raw) => {
      const parsed = Snapshot.safeParse(raw);
      if (!parsed.success) {
        throw new MeshError(
          ErrorCode.INVALID_VALUE,
          options.refusal(parsed.error.issues[0]?.message ?? "bad shape"),
          { path },
        );
      }
      return parsed.data[list] as T[];
    },
    toSnapshot: (records) => ({
      version: 1,
      [list]: [...records].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1)),
    }),
    parseRecord: (raw) => record.parse(raw),
    keyOf,
  };
}

/** Journal lines a snapshot absorbs before it is written again: past the records' count. */
const JOURNAL_SLACK = 1_000;

type Line<T> = { readonly set: T } | { readonly delete: string };

export class RecordFile<T> {
  readonly #options: RecordFileOptions<T>;
  readonly #records: Map<string, T>;
  #journalLines = 0;
  #hasSnapshot: boolean;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(options: RecordFileOptions<T>, records: Map<string, T>, snapshot: boolean) {
    this.#options = options;
    this.#records = records;
    this.#hasSnapshot = snapshot;
  }

  /** Reads the snapshot and the journal; folds a journal it found into a new snapshot. */
  static async open<T>(options: RecordFileOptions<T>): Promise<RecordFile<T>> {
    const { records, lines, snapshot } = await readRecords(options);
    const file = new RecordFile(options, records, snapshot);
    if (lines > 0) await file.#compact();
    return file;
  }

  /** The records as kept (the caller's own map of them follows its own changes). */
  records(): T[] {
    return [...this.#records.values()];
  }

  /**
   * Keeps `set` and forgets `deleted` (keys), durably, before it resolves: one append, or a new
   * snapshot when there is none yet or the journal outgrew the records. Calls run one at a time.
   */
  save(set: readonly T[], deleted: readonly string[] = []): Promise<void> {
    const run = this.#queue.then(() => this.#save(set, deleted));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #save(set: readonly T[], deleted: readonly string[]): Promise<void> {
    const lines: Line<T>[] = [
      ...set.map((record) => ({ set: record })),
      ...deleted.map((key) => ({ delete: key })),
    ];
    for (const record of set) this.#records.set(this.#options.keyOf(record), record);
    for (const key of deleted) this.#records.delete(key);
    if (lines.length === 0) return;
    if (!this.#hasSnapshot || this.#journalLines + lines.length > this.#slack()) {
      await this.#compact();
      return;
    }
    await appendDurably(
      journalPath(this.#options.path),
      lines.map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
    this.#journalLines += lines.length;
  }

  #slack(): number {
    return this.#records.size + (this.#options.slack ?? JOURNAL_SLACK);
  }

  /** Writes every record as the snapshot, then empties the journal (replaying it is harmless). */
  async #compact(): Promise<void> {
    const { path, toSnapshot } = this.#options;
    await writeJsonFile(path, toSnapshot([...this.#records.values()]));
    this.#hasSnapshot = true;
    await unlink(journalPath(path)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    this.#journalLines = 0;
  }
}

export const journalPath = (path: string): string => `${path}.journal`;

/**
 * The records as the snapshot and the journal leave them, how many journal lines there were, and
 * whether there was a snapshot.
 */
export async function readRecords<T>(
  options: RecordFileOptions<T>,
): Promise<{ records: Map<string, T>; lines: number; snapshot: boolean }> {
  const records = new Map<string, T>();
  const raw = await readJsonFile(options.path);
  if (raw !== undefined) {
    for (const r of options.fromSnapshot(raw)) records.set(options.keyOf(r), r);
  }
  const journal = journalPath(options.path);
  const text = await readFile(journal, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return "";
    throw error;
  });
  const lines = text.split("\n");
  const last = lines.length - 1;
  let count = 0;
  for (const [i, l] of lines.entries()) {
    if (l === "") continue;
    let line: Line<T>;
    try {
      line = parseLine(l, options.parseRecord);
    } catch (error) {
      // Only the last line can be torn (a crash mid-append): its change was never acknowledged.
      if (i === last) break;
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `line ${i + 1} of ${journal} is not a record this controller wrote (${(error as Error).message}); it was damaged — restore the folder from a backup`,
        { path: journal, cause: error },
      );
    }
    if ("set" in line) records.set(options.keyOf(line.set), line.set);
    else records.delete(line.delete);
    count += 1;
  }
  return { records, lines: count, snapshot: raw !== undefined };
}

function parseLine<T>(text: string, parseRecord: (raw: unknown) => T): Line<T> {
  const value = JSON.parse(text) as { set?: unknown; delete?: unknown };
  if (typeof value.delete === "string") return { delete: value.delete };
  if (value.set !== undefined) return { set: parseRecord(value.set) };
  throw new Error("neither set nor delete");
}
