/**
 * The log file of one of `mesh up`'s own processes (`<root>/logs/mesh/<name>.log`), written only
 * by `mesh up`: it counts the bytes it writes and, before a chunk would take the file past its
 * limit, renames it to `.1` (replacing the one before) and begins a new one. Neither file ever
 * holds more than the limit, whatever the write rate — the bound module logs have (decision
 * 0085), for the mesh's own daemons.
 */
import { closeSync, fstatSync, openSync, renameSync, writeSync } from "node:fs";
import { Writable } from "node:stream";

/** The default limit of each of a daemon's two log files. */
export const DEFAULT_MESH_LOG_BYTES = 10 * 1024 * 1024;

export class RotatingLog extends Writable {
  readonly path: string;
  readonly #maxBytes: number;
  #fd: number;
  #size: number;

  constructor(path: string, maxBytes = DEFAULT_MESH_LOG_BYTES) {
    super();
    this.path = path;
    this.#maxBytes = maxBytes;
    this.#fd = openSync(path, "a", 0o600);
    this.#size = fstatSync(this.#fd).size;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error) => void): void {
    try {
      // Cut a chunk larger than the limit into pieces, each of which fits a file.
      for (let at = 0; at < chunk.length;) {
        if (this.#size >= this.#maxBytes) this.#rotate();
        const piece = chunk.subarray(at, at + (this.#maxBytes - this.#size));
        writeSync(this.#fd, piece);
        this.#size += piece.length;
        at += piece.length;
      }
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _final(done: (error?: Error) => void): void {
    try {
      closeSync(this.#fd);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  #rotate(): void {
    closeSync(this.#fd);
    renameSync(this.path, `${this.path}.1`);
    this.#fd = openSync(this.path, "a", 0o600);
    this.#size = 0;
  }
}
