/**
 * Strict JSON (RFC 8259) read with the position of every key and value, so a manifest problem can
 * say the line it is on. `JSON.parse` gives neither positions for every value nor, on every Node
 * version, the position of a syntax error, and it keeps the last of two equal keys silently; this
 * reader reports both.
 */

/** Where a value (and, in an object, its key) starts in the text, as offsets. */
export interface JsonSpot {
  readonly key?: number;
  readonly value: number;
}

export interface JsonFault {
  readonly kind: "syntax" | "duplicate-key" | "too-deep";
  readonly offset: number;
  readonly message: string;
  /** The key path of the duplicate key (for duplicate-key). */
  readonly at?: readonly (string | number)[];
}

export interface JsonText {
  /** The value read; undefined when a syntax fault stopped the reading. */
  readonly value: unknown;
  readonly faults: readonly JsonFault[];
  /** Where the value at a key path starts, when it exists in the text. */
  readonly spot: (at: readonly (string | number)[]) => JsonSpot | undefined;
}

class Stop extends Error {}

/** One reading of one text: the position, and the spots and faults found so far. */
class JsonReader {
  readonly spots = new Map<string, JsonSpot>();
  readonly faults: JsonFault[] = [];
  #pos = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  /** The whole text as one value; a fault stops the reading with `Stop`. */
  readDocument(): unknown {
    const value = this.readValue([], undefined);
    this.skip();
    if (this.#pos < this.text.length)
      this.fail(`the text goes on after the JSON value ends, with ${this.describe()}`);
    return value;
  }

  private fail(message: string, offset = this.#pos): never {
    this.faults.push({ kind: "syntax", offset, message });
    throw new Stop();
  }

  private skip(): void {
    while (this.#pos < this.text.length) {
      const c = this.text.charCodeAt(this.#pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.#pos++;
      else break;
    }
  }

  private describe(): string {
    return this.#pos >= this.text.length
      ? "the end of the text"
      : `${JSON.stringify(this.text.slice(this.#pos, this.#pos + 12))}`;
  }

  private readString(): string {
    const text = this.text;
    const start = this.#pos;
    this.#pos++;
    while (this.#pos < text.length) {
      const c = text.charCodeAt(this.#pos);
      if (c === 0x22) {
        this.#pos++;
        return JSON.parse(text.slice(start, this.#pos)) as string;
      }
      if (c < 0x20)
        this.fail(
          "a control character (such as a line break) inside a string; write it as an escape like \\n",
        );
      if (c === 0x5c) {
        const next = text[this.#pos + 1];
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(this.#pos + 2, this.#pos + 6)))
            this.fail("\\u is followed by 4 hex digits");
          this.#pos += 6;
          continue;
        }
        if (next === undefined || !'"\\/bfnrt'.includes(next))
          this.fail(`the escape \\${next ?? ""} is not one JSON has`);
        this.#pos += 2;
        continue;
      }
      this.#pos++;
    }
    return this.fail("a string is not closed with a double quote", start);
  }

  private readValue(at: (string | number)[], keyOffset: number | undefined): unknown {
    this.skip();
    const pos = this.#pos;
    this.spots.set(
      JSON.stringify(at),
      keyOffset === undefined ? { value: pos } : { key: keyOffset, value: pos },
    );
    if (at.length > this.maxDepth) {
      this.faults.push({
        kind: "too-deep",
        offset: pos,
        message: `nesting deeper than ${this.maxDepth} levels`,
      });
      throw new Stop();
    }
    const c = this.text[pos];
    if (c === "{") return this.readObject(at);
    if (c === "[") return this.readArray(at);
    if (c === '"') return this.readString();
    return this.readScalar();
  }

  /** A number, true, false or null. */
  private readScalar(): unknown {
    const number = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    number.lastIndex = this.#pos;
    const matched = number.exec(this.text);
    if (matched !== null && matched[0] !== "-") {
      this.#pos += matched[0].length;
      return Number(matched[0]);
    }
    for (const [word, value] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (this.text.startsWith(word, this.#pos)) {
        this.#pos += word.length;
        return value;
      }
    }
    return this.fail(
      `expected a value (text in double quotes, a number, true, false, null, [ or {), found ${this.describe()}`,
    );
  }

  /**
   * Steps past the opening bracket; true when the container closes at once with `close`.
   * Otherwise, after each entry, `next` says whether another follows (false once `close` ends it).
   */
  private open(close: string): boolean {
    this.#pos++;
    this.skip();
    if (this.text[this.#pos] !== close) return false;
    this.#pos++;
    return true;
  }

  private next(close: string, what: string): boolean {
    this.skip();
    if (this.text[this.#pos] === ",") {
      this.#pos++;
      return true;
    }
    if (this.text[this.#pos] === close) {
      this.#pos++;
      return false;
    }
    return this.fail(`expected "," or "${close}" after ${what}, found ${this.describe()}`);
  }

  private readObject(at: (string | number)[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const keys = new Set<string>();
    if (this.open("}")) return out;
    do {
      const [key, keyOffset] = this.readKey();
      if (keys.has(key)) {
        this.faults.push({
          kind: "duplicate-key",
          offset: keyOffset,
          message: `the key ${JSON.stringify(key)} appears twice in one object`,
          at: [...at, key],
        });
      }
      keys.add(key);
      const value = this.readValue([...at, key], keyOffset);
      // defineProperty, as JSON.parse does, so a key "__proto__" is a key like any other.
      Object.defineProperty(out, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } while (this.next("}", "a value"));
    return out;
  }

  /** A key and its colon; returns the key and where it starts. */
  private readKey(): [string, number] {
    this.skip();
    if (this.text[this.#pos] !== '"')
      this.fail(`expected a key in double quotes, found ${this.describe()}`);
    const keyOffset = this.#pos;
    const key = this.readString();
    this.skip();
    if (this.text[this.#pos] !== ":")
      this.fail(`expected ":" after the key ${JSON.stringify(key)}, found ${this.describe()}`);
    this.#pos++;
    return [key, keyOffset];
  }

  private readArray(at: (string | number)[]): unknown[] {
    const out: unknown[] = [];
    if (this.open("]")) return out;
    do out.push(this.readValue([...at, out.length], undefined));
    while (this.next("]", "a list entry"));
    return out;
  }
}

/** Reads `text` as JSON; never throws. Nesting deeper than `maxDepth` is a fault. */
export function readJson(text: string, maxDepth: number): JsonText {
  const reader = new JsonReader(text, maxDepth);
  let value: unknown;
  try {
    value = reader.readDocument();
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    value = undefined;
  }
  const { spots, faults } = reader;
  return {
    value: faults.some((f) => f.kind !== "duplicate-key") ? undefined : value,
    faults,
    spot: (at) => spots.get(JSON.stringify(at)),
  };
}
