import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { parseToolModules } from "./tool-modules.js";
import { idleFromEnv, tuningFromEnv } from "./env.js";

describe("parseToolModules", () => {
  test("groups entries by module in the order given, several per module", () => {
    const parsed = parseToolModules("a=/b/a/1.js,a=/b/a/2.js,b=/b/b/x.js");
    assert.deepEqual(
      [...parsed],
      [
        ["a", ["/b/a/1.js", "/b/a/2.js"]],
        ["b", ["/b/b/x.js"]],
      ],
    );
  });

  test("resolves relative paths from the working folder and skips empty parts", () => {
    assert.deepEqual([...parseToolModules(" a=x/y.js ,,", { cwd: "/w" })], [["a", ["/w/x/y.js"]]]);
    assert.equal(parseToolModules("").size, 0);
  });

  const refused: Array<[string, string, string]> = [
    ["no =", "a", ErrorCode.USAGE],
    ["no path", "a=", ErrorCode.USAGE],
    ["no module", "=x.js", ErrorCode.USAGE],
    ["a bad module name", "Alpha=x.js", ErrorCode.INVALID_NAME],
  ];
  for (const [what, text, code] of refused) {
    test(`refuses ${what}: ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseToolModules(text),
        (error: unknown) => isMeshError(error, code as never),
      );
    });
  }
});

describe("idleFromEnv and the idle tuning", () => {
  test("reads each module's own idle time, 0 included, and ignores what is not <module>=<ms>", () => {
    assert.deepEqual(
      [...idleFromEnv("a=60000,b=0,c=x,=5,d").entries()],
      [
        ["a", 60_000],
        ["b", 0],
      ],
    );
    assert.deepEqual([...idleFromEnv(undefined).entries()], []);
  });

  test("the node's idle time and the memory limit take 0 (never, not measured)", () => {
    assert.deepEqual(
      tuningFromEnv({ MESH_RUNTIME_IDLE_MS: "0", MESH_RUNTIME_EXTERNAL_LIMIT_MB: "64" }),
      { idleMs: 0, externalLimitMb: 64 },
    );
  });
});
