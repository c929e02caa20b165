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

/** Reads `text` as JSON; never throws. Nesting deeper than `maxDepth` is a fault. */
export function readJson(text: string, maxDepth: number): JsonText {
  const spots = new Map<string, JsonSpot>();
  const faults: JsonFault[] = [];
  let pos = 0;

  const fail = (message: string, offset = pos): never => {
    faults.push({ kind: "syntax", offset, message });
    throw new Stop();
  };
  const skip = (): void => {
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) pos++;
      else break;
    }
  };
  const describe = (): string =>
    pos >= text.length ? "the end of the text" : `${JSON.stringify(text.slice(pos, pos + 12))}`;

  const readString = (): string => {
    const start = pos;
    pos++;
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        pos++;
        return JSON.parse(text.slice(start, pos)) as string;
      }
      if (c < 0x20)
        fail(
          "a control character (such as a line break) inside a string; write it as an escape like \\n",
        );
      if (c === 0x5c) {
        const next = text[pos + 1];
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(pos + 2, pos + 6)))
            fail("\\u is followed by 4 hex digits");
          pos += 6;
          continue;
        }
        if (next === undefined || !'"\\/bfnrt'.includes(next))
          fail(`the escape \\${next ?? ""} is not one JSON has`);
        pos += 2;
        continue;
      }
      pos++;
    }
    return fail("a string is not closed with a double quote", start);
  };

  const readValue = (at: (string | number)[], keyOffset: number | undefined): unknown => {
    skip();
    spots.set(
      JSON.stringify(at),
      keyOffset === undefined ? { value: pos } : { key: keyOffset, value: pos },
    );
    if (at.length > maxDepth) {
      faults.push({
        kind: "too-deep",
        offset: pos,
        message: `nesting deeper than ${maxDepth} levels`,
      });
      throw new Stop();
    }
    const c = text[pos];
    if (c === "{") return readObject(at);
    if (c === "[") return readArray(at);
    if (c === '"') return readString();
    const number = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    number.lastIndex = pos;
    const matched = number.exec(text);
    if (matched !== null && matched[0] !== "-") {
      pos += matched[0].length;
      return Number(matched[0]);
    }
    for (const [word, value] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return value;
      }
    }
    return fail(
      `expected a value (text in double quotes, a number, true, false, null, [ or {), found ${describe()}`,
    );
  };

  const readObject = (at: (string | number)[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    const keys = new Set<string>();
    pos++;
    skip();
    if (text[pos] === "}") {
      pos++;
      return out;
    }
    for (;;) {
      skip();
      if (text[pos] !== '"') fail(`expected a key in double quotes, found ${describe()}`);
      const keyOffset = pos;
      const key = readString();
      skip();
      if (text[pos] !== ":")
        fail(`expected ":" after the key ${JSON.stringify(key)}, found ${describe()}`);
      pos++;
      if (keys.has(key)) {
        faults.push({
          kind: "duplicate-key",
          offset: keyOffset,
          message: `the key ${JSON.stringify(key)} appears twice in one object`,
          at: [...at, key],
        });
      }
      keys.add(key);
      const value = readValue([...at, key], keyOffset);
      // defineProperty, as JSON.parse does, so a key "__proto__" is a key like any other.
      Object.defineProperty(out, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      skip();
      if (text[pos] === ",") {
        pos++;
        continue;
      }
      if (text[pos] === "}") {
        pos++;
        return out;
      }
      fail(`expected "," or "}" after a value, found ${describe()}`);
    }
  };

  const readArray = (at: (string | number)[]): unknown[] => {
    const out: unknown[] = [];
    pos++;
    skip();
    if (text[pos] === "]") {
      pos++;
      return out;
    }
    for (;;) {
      out.push(readValue([...at, out.length], undefined));
      skip();
      if (text[pos] === ",") {
        pos++;
        continue;
      }
      if (text[pos] === "]") {
        pos++;
        return out;
      }
      fail(`expected "," or "]" after a list entry, found ${describe()}`);
    }
  };

  let value: unknown;
  try {
    value = readValue([], undefined);
    skip();
    if (pos < text.length) fail(`the text goes on after the JSON value ends, with ${describe()}`);
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    value = undefined;
  }
  return {
    value: faults.some((f) => f.kind !== "duplicate-key") ? undefined : value,
    faults,
    spot: (at) => spots.get(JSON.stringify(at)),
  };
}
