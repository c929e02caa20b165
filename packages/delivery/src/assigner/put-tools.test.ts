/**
 * The assigner's put tools (decision 0190) as their code decides, run by the SDK's fake runtime
 * with the mesh's buckets as the states `mesh/<bucket>` the runtime hands a part: a put of a built
 * build is written for the assigner, and each refusal is the coded tool error a caller gets
 * (`mesh put`'s did-you-mean of a module and of a build, a build not built, a name that is none).
 * On a real mesh, through the runtime: cli/src/e2e/self-hosting.e2e.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isToolError } from "@mesh/sdk";
import { testModule, type TestModule } from "@mesh/sdk/testing";
import { Bucket, MeshPart, Put, meshRef, type Build } from "@mesh/protocol";
import tools from "./put-tools.js";

const T0 = "2026-01-01T00:00:00.000Z";

function build(module: string, id: string, status: Build["status"]): Build {
  return {
    module,
    build: id,
    status,
    candidate: 1,
    bundles: [],
    log: "",
    timings: { started: T0 },
  };
}

function mesh(): TestModule {
  const m = testModule(tools, { module: MeshPart.assigner, node: "n1" });
  m.state(meshRef(Bucket.modules)).set("hello", { module: "hello" });
  m.state(meshRef(Bucket.modules)).set("counter", { module: "counter" });
  const builds = m.state(meshRef(Bucket.builds));
  builds.set("hello.1-aaaaaaaa", build("hello", "1-aaaaaaaa", "built"));
  builds.set("hello.2-bbbbbbbb", build("hello", "2-bbbbbbbb", "failed"));
  builds.set("counter.1-cccccccc", build("counter", "1-cccccccc", "built"));
  return m;
}

async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call;
  } catch (error) {
    assert.ok(isToolError(error), `a coded tool error, not ${String(error)}`);
    return { code: error.code, message: error.message };
  }
  assert.fail("the call was not refused");
}

describe("mesh-assigner/put", () => {
  it("writes a put of a built build, on every node or one, with who asked and why", async () => {
    const m = mesh();
    assert.deepEqual(await m.call("put", { module: "hello", build: "1-aaaaaaaa", by: "ada" }), {
      key: "all.hello",
      put: "1-aaaaaaaa",
    });
    assert.deepEqual(
      await m.call("put", { module: "hello", build: "1-aaaaaaaa", node: "n2", why: "canary" }),
      { key: "n2.hello", put: "1-aaaaaaaa" },
    );
    const puts = m.state(meshRef(Bucket.puts));
    const all = Put.parse(puts.get("all.hello"));
    assert.equal(all.build, "1-aaaaaaaa");
    assert.equal(all.by, "ada");
    const one = Put.parse(puts.get("n2.hello"));
    assert.equal(one.why, "canary");
    assert.equal(one.by, "a tool call", "who asked is the caller's word; none said, none claimed");
  });

  const refusals: Array<[string, Record<string, unknown>, string, RegExp]> = [
    [
      "a module not registered, naming the closest",
      { module: "helo", build: "1-aaaaaaaa" },
      "REFUSED",
      /no module "helo" — did you mean "hello"\? \(registered: counter, hello\)/,
    ],
    [
      "a build the module has not, naming the closest of its own",
      { module: "hello", build: "1-aaaaaaab" },
      "NOT_FOUND",
      /hello has no build "1-aaaaaaab" — did you mean "1-aaaaaaaa"\?; see `mesh builds hello`/,
    ],
    [
      "another module's build is not one of its own",
      { module: "hello", build: "1-cccccccc" },
      "NOT_FOUND",
      /hello has no build "1-cccccccc"; see/,
    ],
    [
      "a build that did not finish",
      { module: "hello", build: "2-bbbbbbbb" },
      "REFUSED",
      /hello build 2-bbbbbbbb is failed, and only a built build can be put/,
    ],
    [
      "a node that is no name",
      { module: "hello", build: "1-aaaaaaaa", node: "N 1" },
      "INVALID_INPUT",
      /node/,
    ],
    [
      "all is no node",
      { module: "hello", build: "1-aaaaaaaa", node: "all" },
      "INVALID_INPUT",
      /all/,
    ],
    [
      "a module that is no name",
      { module: "Hello", build: "1-aaaaaaaa" },
      "INVALID_INPUT",
      /module/,
    ],
  ];
  for (const [what, input, code, says] of refusals) {
    it(`refuses ${what} (${code}), writing nothing`, async () => {
      const m = mesh();
      const refused = await refusal(m.call("put", input));
      assert.equal(refused.code, code);
      assert.match(refused.message, says);
      assert.equal(m.state(meshRef(Bucket.puts)).size, 0);
    });
  }
});

describe("mesh-assigner/unput", () => {
  it("lifts a put that stands, says so, and names the module's puts that still hold", async () => {
    const m = mesh();
    await m.call("put", { module: "hello", build: "1-aaaaaaaa" });
    await m.call("put", { module: "hello", build: "1-aaaaaaaa", node: "n2" });
    await m.call("put", { module: "counter", build: "1-cccccccc" });
    assert.deepEqual(await m.call("unput", { module: "hello" }), {
      key: "all.hello",
      lifted: true,
      others: ["n2.hello"],
    });
    assert.deepEqual(await m.call("unput", { module: "hello" }), {
      key: "all.hello",
      lifted: false,
      others: ["n2.hello"],
    });
    assert.deepEqual([...m.state(meshRef(Bucket.puts)).keys()].sort(), ["all.counter", "n2.hello"]);
  });

  it("a key the runtime answers with null (it has no value) is no put to lift", async () => {
    const m = mesh();
    m.state(meshRef(Bucket.puts)).set("all.hello", null);
    assert.deepEqual(await m.call("unput", { module: "hello" }), {
      key: "all.hello",
      lifted: false,
      others: [],
    });
  });
});
