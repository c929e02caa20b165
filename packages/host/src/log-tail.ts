/**
 * The output of a process whose stdout and stderr are the log files themselves: one a host
 * started before the host kept output through pipes (log-pipe.ts), adopted by a newer host. The
 * host tails each file into `mesh.logs.<node>.<module>` and bounds it by rotation: once it
 * reaches the limit, its last `maxFileBytes` are copied to `.1` and it is truncated (the process
 * appends, so it goes on writing at the new end). Rotation is looked at on every change of the
 * file (inotify through `fs.watch`) and on the host's poll, so `.1` never holds more than the
 * limit; the file itself holds what the writer adds between two looks, which no reader of a file
 * can bound. A tail that falls behind skips ahead and says how much.
 */
import { watch, type FSWatcher } from "node:fs";
import { open, rename, stat, truncate } from "node:fs/promises";
import { LineSender, type TailLimits } from "./log-lines.js";

/** The most a poll reads: more behind than this is skipped (the line cap would drop it anyway). */
const READ_AT_MOST = 1024 * 1024;

/** Follows one file from `offset` (its size when the host took it up). */
export class FileTail {
  readonly path: string;
  readonly #limits: TailLimits;
  readonly #lines: LineSender;
  #offset: number;
  #busy = false;
  /** A change came while a poll ran: poll once more when it ends. */
  #again = false;
  #watcher: FSWatcher | undefined;
  #closed = false;

  constructor(path: string, offset: number, limits: TailLimits, onLine: (line: string) => void) {
    this.path = path;
    this.#offset = offset;
    this.#limits = limits;
    this.#lines = new LineSender(limits, onLine);
  }

  /** Reads what was appended since the last poll, hands its lines, and rotates when due. */
  async poll(): Promise<void> {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    try {
      do {
        this.#again = false;
        await this.#pollOnce();
      } while (this.#again && !this.#closed);
    } finally {
      this.#busy = false;
    }
    this.watch();
  }

  /** Stops watching the file (polls still work). */
  close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
    return Promise.resolve();
  }

  async #pollOnce(): Promise<void> {
    this.#lines.window(Date.now());
    const size = (await stat(this.path).catch(() => undefined))?.size;
    if (size === undefined) return;
    if (size < this.#offset) this.#offset = 0; // truncated by someone
    // Far past the limit (a writer faster than the tail): rotate before reading anything, so the
    // file is bounded first; what was not read is in `.1` (its last part) and said here.
    if (size >= 2 * this.#limits.maxFileBytes) {
      const unread = size - this.#offset;
      await this.#rotate(size);
      this.#lines.forgetPartial();
      this.#lines.say(`[mesh host: ${unread} bytes skipped: written faster than they are read]`);
      return;
    }
    // Far behind a fast writer: what the line cap would drop anyway is skipped unread.
    if (size - this.#offset > READ_AT_MOST) {
      const skipped = size - READ_AT_MOST - this.#offset;
      this.#offset = size - READ_AT_MOST;
      this.#lines.forgetPartial();
      this.#lines.say(`[mesh host: ${skipped} bytes skipped: written faster than they are read]`);
    }
    if (size > this.#offset) {
      const handle = await open(this.path, "r");
      try {
        const length = size - this.#offset;
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
        this.#offset += bytesRead;
        this.#lines.take(buffer.subarray(0, bytesRead));
      } finally {
        await handle.close();
      }
    }
    if (size >= this.#limits.maxFileBytes) await this.#rotate(size);
  }

  /** Keeps the last `maxFileBytes` of the file in `.1` (replaced whole), then empties the file. */
  async #rotate(size: number): Promise<void> {
    const keep = Math.min(size, this.#limits.maxFileBytes);
    const next = `${this.path}.1.next`;
    const from = await open(this.path, "r");
    try {
      const to = await open(next, "w", 0o640);
      try {
        const chunk = Buffer.alloc(Math.min(keep, 1024 * 1024));
        for (let done = 0; done < keep;) {
          const { bytesRead } = await from.read(
            chunk,
            0,
            Math.min(chunk.length, keep - done),
            size - keep + done,
          );
          if (bytesRead === 0) break;
          await to.write(chunk, 0, bytesRead);
          done += bytesRead;
        }
      } finally {
        await to.close();
      }
    } finally {
      await from.close();
    }
    await rename(next, `${this.path}.1`);
    await truncate(this.path, 0);
    this.#offset = 0;
  }

  /**
   * Polls on every change of the file, so rotation keeps up with a fast writer. Harmless to call
   * again; a file that does not exist yet is watched from the first poll that finds it.
   */
  watch(): void {
    if (this.#watcher !== undefined || this.#closed) return;
    try {
      const watcher = watch(
        this.path,
        { persistent: false },
        () => void this.poll().catch(() => undefined),
      );
      watcher.on("error", () => {
        // The file went away (or the watch broke): the next poll watches again.
        watcher.close();
        if (this.#watcher === watcher) this.#watcher = undefined;
      });
      this.#watcher = watcher;
    } catch {
      // No file yet: the interval's poll tries again.
    }
  }
}
