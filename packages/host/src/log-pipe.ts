/**
 * A process's output goes through a named pipe the host reads, into a log file only the host
 * writes: `<root>/logs/<module>/<process>.log` (stdout) and `<process>.stderr.log`, each fed by
 * `<file>.pipe`. Because the host writes every byte, it rotates by the bytes it wrote: the file
 * never holds more than `maxFileBytes`, nor does `.1`, whatever the write rate (issue 15). A
 * writer faster than the disk waits on its pipe, as a writer to a full disk would.
 *
 * The process is handed the pipe opened for reading *and* writing, so it always holds a reader
 * of its own: a host that is killed takes nothing with it (no SIGPIPE, no EPIPE), the output it
 * had not read stays in the pipe, and the next host opens the pipe by its name and reads on.
 * While no host reads, a process can write a pipe's buffer (64 KiB on Linux) and then its writes
 * wait until one does: the price of a hard bound, for the seconds a host takes to come back.
 */
import { spawnSync } from "node:child_process";
import { constants, open as openFd } from "node:fs";
import { lstat, open, rename, stat, truncate, unlink, type FileHandle } from "node:fs/promises";
import { Socket } from "node:net";
import { promisify } from "node:util";
import { LineSender, type TailLimits } from "./log-lines.js";

const openRaw = promisify(openFd);

/** The most a closing reader writes of what it read ahead (a writer faster than the disk never ends it). */
const DRAIN_LIMIT = 4 * 1024 * 1024;

/** The pipe that feeds a log file. */
export const pipeOf = (file: string): string => `${file}.pipe`;

/** Makes the named pipe `path` unless one is there; anything else of that name is replaced. */
export async function ensurePipe(path: string): Promise<void> {
  const found = await lstat(path).catch(() => undefined);
  if (found?.isFIFO() === true) return;
  if (found !== undefined) await unlink(path);
  // Node has no mkfifo; coreutils' does it (the host runs on Linux: /proc is its process table).
  const made = spawnSync("mkfifo", ["-m", "0640", path], { encoding: "utf8" });
  if (made.status !== 0 && (await lstat(path).catch(() => undefined))?.isFIFO() !== true) {
    throw new Error(
      `could not make the output pipe ${path}: ${made.error?.message ?? made.stderr.trim()}`,
    );
  }
}

/**
 * The pipe as the process's stdout or stderr: read-write, so the process is never without a
 * reader (see above). The caller closes it once the process has it.
 */
export async function openForProcess(path: string): Promise<FileHandle> {
  await ensurePipe(path);
  return open(path, constants.O_RDWR);
}

/** Reads one pipe into its log file, rotating by bytes written, and hands its lines. */
export class LogPipe {
  /** The log file. */
  readonly path: string;
  readonly #limits: TailLimits;
  readonly #lines: LineSender;
  #socket: Socket | undefined;
  #opening: Promise<void> | undefined;
  #file: FileHandle | undefined;
  #size = 0;
  /** The write in progress: reading waits for it (the pipe fills and the writer waits). */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  #failed = false;

  constructor(path: string, limits: TailLimits, onLine: (line: string) => void) {
    this.path = path;
    this.#limits = limits;
    this.#lines = new LineSender(limits, onLine);
  }

  /** Starts reading (harmless to call again): before the process is started, or on adoption. */
  async watch(): Promise<void> {
    if (this.#closed || this.#socket !== undefined) return;
    this.#opening ??= this.#open().finally(() => (this.#opening = undefined));
    await this.#opening;
  }

  /** Waits until what was read is written (the lines' window moves on). */
  async poll(): Promise<void> {
    this.#lines.window(Date.now());
    await this.#writing;
  }

  /**
   * Stops reading; what the pipe holds stays there for the next reader. What was read from the
   * pipe already (the socket's buffer, up to its high-water mark) is written to the file first, so
   * no line is lost between this reader and the next (a host handing the node over, decision 0200).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket !== undefined) {
      socket.pause();
      socket.removeAllListeners("data");
      await this.#writing.catch(() => undefined);
      // Each read hands what the socket holds; libuv pushes what it reads from the pipe in the
      // same callback, so once a read finds nothing nothing is between the pipe and this reader.
      for (let kept = 0; kept < DRAIN_LIMIT;) {
        const chunk = socket.read() as Buffer | null;
        if (chunk === null) break;
        await this.#keep(chunk).catch(() => undefined);
        kept += chunk.length;
      }
      socket.destroy();
    }
    const file = this.#file;
    this.#file = undefined;
    await file?.close().catch(() => undefined);
  }

  async #open(): Promise<void> {
    const pipe = pipeOf(this.path);
    await ensurePipe(pipe);
    const file = await open(this.path, "a", 0o640);
    this.#size = (await file.stat()).size;
    this.#file = file;
    // A file left over the limit (by a host before pipes): bounded before anything is added.
    if (this.#size > this.#limits.maxFileBytes) await this.#rotate();
    // Read-write here too, so the pipe never ends while processes come and go.
    const fd = await openRaw(pipe, constants.O_RDWR | constants.O_NONBLOCK);
    if (this.#closed) {
      new Socket({ fd }).destroy();
      return;
    }
    const socket = new Socket({ fd, readable: true, writable: false });
    socket.on("data", (chunk: Buffer) => {
      socket.pause();
      this.#writing = this.#keep(chunk)
        .then(() => {
          this.#failed = false;
        })
        .catch((error: unknown) => {
          // Said once per trouble (a full disk, say); the output is dropped meanwhile.
          if (!this.#failed)
            this.#lines.say(`[mesh host: output not kept in ${this.path}: ${String(error)}]`);
          this.#failed = true;
        })
        .finally(() => {
          if (!this.#closed) socket.resume();
        });
    });
    socket.on("error", () => undefined); // closed under it: nothing more to read
    this.#socket = socket;
  }

  /** Writes a chunk to the file, rotating so that neither file passes the limit. */
  async #keep(chunk: Buffer): Promise<void> {
    this.#lines.take(chunk);
    const max = this.#limits.maxFileBytes;
    if (this.#file === undefined && !this.#closed) {
      // A rotation that failed half-way (a full disk) left no file open: begin one.
      this.#file = await open(this.path, "a", 0o640);
      this.#size = (await this.#file.stat()).size;
    }
    let at = 0;
    while (at < chunk.length && this.#file !== undefined) {
      const left = chunk.length - at;
      // A chunk that fits a fresh file starts one, so chunks (lines, mostly) stay whole.
      if (this.#size + left > max && this.#size > 0 && left <= max) await this.#rotate();
      if (this.#size >= max) await this.#rotate();
      const n = Math.min(left, max - this.#size);
      const file = this.#file;
      if (file === undefined) return;
      const { bytesWritten } = await file.write(chunk, at, n);
      at += bytesWritten;
      this.#size += bytesWritten;
    }
  }

  /** The file becomes `.1` (replacing it; at most the limit is kept), and a new file begins. */
  async #rotate(): Promise<void> {
    await this.#file?.close();
    this.#file = undefined;
    const rotated = `${this.path}.1`;
    await rename(this.path, rotated);
    if ((await stat(rotated)).size > this.#limits.maxFileBytes) {
      await truncate(rotated, this.#limits.maxFileBytes);
    }
    if (this.#closed) return;
    this.#file = await open(this.path, "a", 0o640);
    this.#size = 0;
  }
}
