/**
 * The lines of a process's output as the host sends them to `mesh.logs.<node>.<module>`: cut at
 * a length, at most so many a second (the rest counted and said in one line).
 */
import { StringDecoder } from "node:string_decoder";

export interface TailLimits {
  /** A log file longer than this is rotated. */
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

export class LineSender {
  readonly #limits: TailLimits;
  readonly #onLine: (line: string) => void;
  readonly #decoder = new StringDecoder("utf8");
  #partial = "";
  #windowStart = 0;
  #sentInWindow = 0;
  #dropped = 0;

  constructor(limits: TailLimits, onLine: (line: string) => void) {
    this.#limits = limits;
    this.#onLine = onLine;
  }

  /** Says something of the host's own (bytes skipped), outside the line cap. */
  say(line: string): void {
    this.#onLine(line);
  }

  /** Forgets a line begun and not ended (what followed it was skipped). */
  forgetPartial(): void {
    this.#partial = "";
  }

  /** Starts a new second when the last one is over, saying how many lines it dropped. */
  window(now: number): void {
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

  /** Takes output as it came (a chunk may end mid-line, or mid-character). */
  take(chunk: Buffer | string): void {
    const text = typeof chunk === "string" ? chunk : this.#decoder.write(chunk);
    const parts = (this.#partial + text).split("\n");
    this.#partial = parts.pop() ?? "";
    if (this.#partial.length > this.#limits.maxLineChars) {
      parts.push(this.#partial);
      this.#partial = "";
    }
    this.window(Date.now());
    const max = this.#limits.maxLineChars;
    for (const line of parts) {
      if (this.#sentInWindow >= this.#limits.linesPerSecond) {
        this.#dropped += 1;
        continue;
      }
      this.#sentInWindow += 1;
      this.#onLine(line.length > max ? `${line.slice(0, max)}… [cut at ${max} characters]` : line);
    }
  }
}
