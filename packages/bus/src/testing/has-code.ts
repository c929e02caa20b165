/**
 * What `assert.rejects` checks a refusal with: a MeshError with this code, and a message that
 * matches `message` when one is given. A wrong error fails the assertion saying which it was.
 *
 * ```ts
 * await assert.rejects(other.get("secret"), hasCode(ErrorCode.PERMISSION_DENIED));
 * ```
 */
import assert from "node:assert/strict";
import { MeshError, type ErrorCode } from "@mesh/protocol";

export function hasCode(code: ErrorCode, message?: RegExp): (error: unknown) => boolean {
  return (error: unknown) => {
    assert.ok(error instanceof MeshError, `expected a MeshError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message !== undefined) assert.match(error.message, message);
    return true;
  };
}
