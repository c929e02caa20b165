import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode, MeshError, ReplyCode, isMeshError, toReplyCode } from "./errors.js";

describe("MeshError", () => {
  test("keeps its code, message, cause and fields", () => {
    const cause = new Error("connection refused");
    const error = new MeshError(ErrorCode.CONNECT_FAILED, "could not reach the bus", {
      node: "edge-01",
      module: "hello",
      key: "edge-01.hello",
      subject: "mesh.tools.edge-01.hello.greet",
      path: "/var/lib/mesh/broker.json",
      cause,
    });
    assert.ok(error instanceof Error);
    assert.equal(error.name, "MeshError");
    assert.equal(error.code, ErrorCode.CONNECT_FAILED);
    assert.equal(error.message, "could not reach the bus");
    assert.equal(error.cause, cause);
    assert.equal(error.node, "edge-01");
    assert.equal(error.module, "hello");
    assert.equal(error.key, "edge-01.hello");
    assert.equal(error.subject, "mesh.tools.edge-01.hello.greet");
    assert.equal(error.path, "/var/lib/mesh/broker.json");
    assert.ok(error.stack?.includes("MeshError"));
  });

  test("without fields, has no cause and no fields", () => {
    const error = new MeshError(ErrorCode.TIMEOUT, "took too long");
    assert.equal("cause" in error, false);
    for (const field of ["node", "module", "key", "subject", "path"] as const) {
      assert.equal(error[field], undefined);
    }
  });

  test("keeps a cause that is not an Error", () => {
    const error = new MeshError(ErrorCode.INTERNAL, "odd", { cause: "a string" });
    assert.equal(error.cause, "a string");
  });

  test("toJSON has code, message and only the fields that are set, never the cause", () => {
    const error = new MeshError(ErrorCode.NOT_FOUND, "no such module", {
      module: "hello",
      cause: new Error("detail"),
    });
    assert.deepEqual(error.toJSON(), {
      code: "NOT_FOUND",
      message: "no such module",
      module: "hello",
    });
    assert.deepEqual(JSON.parse(JSON.stringify(error)), error.toJSON());
    assert.deepEqual(new MeshError(ErrorCode.USAGE, "m").toJSON(), { code: "USAGE", message: "m" });
  });

  test("isMeshError tells a MeshError, and its code, from anything else", () => {
    const error = new MeshError(ErrorCode.CONFLICT, "lost a race");
    assert.equal(isMeshError(error), true);
    assert.equal(isMeshError(error, ErrorCode.CONFLICT), true);
    assert.equal(isMeshError(error, ErrorCode.TIMEOUT), false);
    const lookalike = Object.assign(new Error("x"), { code: ErrorCode.CONFLICT });
    for (const other of [lookalike, { code: "CONFLICT" }, "CONFLICT", undefined, null]) {
      assert.equal(isMeshError(other), false);
      assert.equal(isMeshError(other, ErrorCode.CONFLICT), false);
    }
  });
});

describe("codes", () => {
  test("every ErrorCode and ReplyCode is its own name (what is matched on is what is written)", () => {
    for (const [name, code] of Object.entries(ErrorCode)) assert.equal(code, name);
    for (const [name, code] of Object.entries(ReplyCode)) assert.equal(code, name);
  });

  test("codes are SCREAMING_SNAKE_CASE", () => {
    for (const code of [...Object.values(ErrorCode), ...Object.values(ReplyCode)]) {
      assert.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
    }
  });

  test("every reply code is also an error code (a coded reply is rethrown as a MeshError)", () => {
    const errorCodes = new Set<string>(Object.values(ErrorCode));
    for (const code of Object.values(ReplyCode)) assert.ok(errorCodes.has(code), code);
  });
});

describe("toReplyCode", () => {
  test("keeps every code of the table", () => {
    for (const code of Object.values(ReplyCode)) assert.equal(toReplyCode(code), code);
  });

  for (const value of [
    "BOGUS",
    "internal",
    "not_found",
    " NOT_FOUND",
    "",
    "toString",
    "hasOwnProperty",
    "__proto__",
    "constructor",
    42,
    null,
    undefined,
    {},
    ["NOT_FOUND"],
  ]) {
    test(`maps ${JSON.stringify(value) ?? "undefined"} to INTERNAL`, () => {
      assert.equal(toReplyCode(value), ReplyCode.INTERNAL);
    });
  }

  test("maps error codes outside the reply table to INTERNAL", () => {
    const replyCodes = new Set<string>(Object.values(ReplyCode));
    for (const code of Object.values(ErrorCode)) {
      assert.equal(toReplyCode(code), replyCodes.has(code) ? code : ReplyCode.INTERNAL, code);
    }
  });

  test("always returns a code of the table; anything not in it becomes INTERNAL", () => {
    const table = Object.values(ReplyCode) as unknown[];
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.constantFrom(...table)), (value) => {
        const code = toReplyCode(value);
        assert.ok(table.includes(code));
        assert.equal(code, table.includes(value) ? value : ReplyCode.INTERNAL);
      }),
    );
  });
});
