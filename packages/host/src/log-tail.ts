/**
 * A process's output goes to files, not pipes: `<root>/logs/<module>/<process>.log` (stdout) and
 * `<process>.stderr.log`, opened for appending and handed to the process. A pipe would tie the
 * process to the host — a host that is killed would take its processes' output (and, through
 * SIGPIPE, the processes) with it; a file outlives the host, and a restarted host picks up the
 * process and its file again.
 *
 * The host tails each file into `mesh.logs.<node>.<module>`, bounded: lines are cut at a length
 * and at most so many lines a second are sent (the rest are counted and said in one line). The
 * file itself is bounded by rotation: past a size it is copied to `.1` and truncated (the process
 * appends, so it goes on writing at the new end).
 */
import { copyFile, open, stat, truncate } from "node:fs/promises";

export interface TailLimits {
  /** A file longer than this is rotated. */
  readonly maxFileBytes: number;
  /** Longer lines are cut to this many characters. */
  readonly maxLineChars: number;
  /** Lines sent per second and file; the rest are dropped and counted. */
  readonly linesPerSecond: number;
}

export const DEFAULT_TAIL_LIMITS: TailLimits = {
  maxFileBytes: 10 * 1024 * 1024,
  maxLineChars: 4096,
  linesPerSecond: 200,
};

/** Follows one file from `offset` (its size when the host took it up). */
export class FileTail {
  readonly path: string;
  readonly #limits: TailLimits;
  readonly #onLine: (line: string) => void;
  #offset: number;
  #partial = "";
  #windowStart = 0;
  #sentInWindow = 0;
  #dropped = 0;
  #busy = false;

  constructor(path: string, offset: number, limits: TailLimits, onLine: (line: string) => void) {
    this.path = path;
    this.#offset = offset;
    this.#limits = limits;
    this.#onLine = onLine;
  }

  /** Reads what was appended since the last poll, hands its lines, and rotates when due. */
  async poll(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      this.#window(Date.now());
      const size = (await stat(this.path).catch(() => undefined))?.size;
      if (size === undefined) return;
      if (size < this.#offset) this.#offset = 0; // truncated by someone
      if (size > this.#offset) {
        const handle = await open(this.path, "r");
        try {
          const length = Math.min(size - this.#offset, 1024 * 1024);
          const buffer = Buffer.alloc(length);
          const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
          this.#offset += bytesRead;
          this.#take(buffer.subarray(0, bytesRead).toString("utf8"));
        } finally {
          await handle.close();
        }
      }
      if (this.#offset >= this.#limits.maxFileBytes) {
        await copyFile(this.path, `${this.path}.1`);
        await truncate(this.path, 0);
        this.#offset = 0;
      }
    } finally {
      this.#busy = false;
    }
  }

  /** Starts a new second when the last one is over, saying how many lines it dropped. */
  #window(now: number): void {
    if (now - this.#windowStart < 1000) return;
    if (this.#dropped > 0) {
      this.#onLine(
        `[mesh host: ${this.#dropped} line(s) dropped: more than ${this.#limits.linesPerSecond} a second]`,
      );
      this.#dropped = 0;
    }
    this.#windowStart = now;
    this.#sentInWindow = 0;
  }

  #take(text: string): void {
    const parts = (this.#partial + text).split("\n");
    this.#partial = parts.pop() ?? "";
    if (this.#partial.length > this.#limits.maxLineChars) {
      parts.push(this.#partial);
      this.#partial = "";
    }
    const now = Date.now();
    if (now - this.#windowStart >= 1000) {
      if (this.#dropped > 0) {
        this.#onLine(
          `[mesh host: ${this.#dropped} line(s) dropped: more than ${this.#limits.linesPerSecond} a second]`,
        );
        this.#dropped = 0;
      }
      this.#windowStart = now;
      this.#sentInWindow = 0;
    }
    for (const line of parts) {
      if (this.#sentInWindow >= this.#limits.linesPerSecond) {
        this.#dropped += 1;
        continue;
      }
      this.#sentInWindow += 1;
      this.#onLine(
        line.length > this.#limits.maxLineChars
          ? `${line.slice(0, this.#limits.maxLineChars)}… [cut at ${this.#limits.maxLineChars} characters]`
          : line,
      );
    }
  }
}
