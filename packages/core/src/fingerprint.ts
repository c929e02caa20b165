/**
 * Canonical JSON and the fingerprint of a value: the same data gives the same bytes and the same
 * digest, whatever order its object keys were built in. Composition fingerprints the resources it
 * returns; the host reports the fingerprint it applied, and the assigner compares the two.
 */
import { createHash } from "node:crypto";
import { ErrorCode, MeshError } from "@mesh/protocol";

/**
 * JSON with every object's keys sorted (by UTF-16 code units, as `Array.prototype.sort` does),
 * no whitespace, and properties whose value is `undefined` left out, as `JSON.stringify` leaves
 * them out. Array order is kept: where order means something, the caller decides it.
 *
 * Throws INVALID_VALUE for what JSON cannot hold without loss (a non-finite number, a bigint, a
 * function, a symbol, a cycle), rather than writing something that reads back as other data.
 */
export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, parts, new Set(), "");
  return parts.join("");
}

/** The lowercase hex SHA-256 of the value's canonical JSON. */
export function fingerprintOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value), "utf8").digest("hex");
}

function write(value: unknown, out: string[], open: Set<object>, at: string): void {
  switch (typeof value) {
    case "string":
    case "boolean":
      out.push(JSON.stringify(value));
      return;
    case "number":
      if (!Number.isFinite(value)) throw unsupported(at, String(value));
      out.push(JSON.stringify(value));
      return;
    case "object":
      break;
    case "undefined":
    case "bigint":
    case "function":
    case "symbol":
      throw unsupported(at, typeof value);
  }
  if (value === null) {
    out.push("null");
    return;
  }
  if (open.has(value)) throw unsupported(at, "a cycle");
  open.add(value);
  if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item: unknown, index) => {
      if (index > 0) out.push(",");
      // As JSON.stringify does, an array keeps its length: a hole or undefined is null.
      if (item === undefined) out.push("null");
      else write(item, out, open, `${at}[${index}]`);
    });
    out.push("]");
  } else {
    out.push("{");
    let first = true;
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined) continue;
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(key), ":");
      write(item, out, open, `${at}.${key}`);
    }
    out.push("}");
  }
  open.delete(value);
}

function unsupported(at: string, what: string): MeshError {
  return new MeshError(
    ErrorCode.INVALID_VALUE,
    `cannot write ${what} at ${at === "" ? "the top" : JSON.stringify(at)} as canonical JSON; ` +
      "only strings, finite numbers, booleans, null, arrays and plain objects can be fingerprinted",
    { path: at },
  );
}
