/**
 * A mesh part's tools reach the mesh's own buckets through the runtime (decision 0190): the
 * assigner's put tools read `mesh/builds` and write `mesh/puts` as states. On a real bus whose
 * runtime user holds exactly `runtimeGrant` for the part's manifest, and a real host answering the
 * bound values the controller composes: the part reads what its manifest reads, writes what it
 * writes, and may not write what it only reads; another module's code naming a mesh bucket is
 * refused by the runtime before the bus is asked, although the runtime's credential could.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket, request } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { hostGrant } from "@mesh/core";
import {
  Bucket,
  BoundKey,
  ErrorCode,
  MESH_OWNER,
  MeshPart,
  toolSubject,
  type ComposedModule,
} from "@mesh/protocol";
import type { RuntimeStatus } from "./runtime.js";
import { ModuleState } from "./module-worker.js";
import { HOST_USER, startHostClient, type HostClient } from "./test-support/host-client.js";
import { NODE, served, startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const PART = {
  ...served(MeshPart.assigner),
  reads: [`${MESH_OWNER}/builds`],
  writes: [`${MESH_OWNER}/puts`],
};

/** Tries one state operation and says how it went: the value, "written", or the refusal's code. */
const TOOLS = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({
      name: "try", description: "Uses one of the mesh's buckets as a state.",
      input: z.object({ state: z.string(), op: z.enum(["get", "put"]), key: z.string() }),
      handler: async ({ state, op, key }, ctx) => {
        try {
          const s = ctx.state(state);
          if (op === "get") return { value: (await s.get(key)) ?? null };
          await s.put(key, { build: "1-aaaaaaaa", by: "ada", why: "", at: new Date(0).toISOString() });
          return { value: "written" };
        } catch (e) {
          return { refused: e.code, message: e.message };
        }
      },
    }),
  ],
});
`;

const COMPOSED: Record<string, ComposedModule> = {
  [MeshPart.assigner]: {
    config: {},
    bound: {
      [BoundKey.read(MESH_OWNER, "builds")]: Bucket.builds,
      [BoundKey.write(MESH_OWNER, "puts")]: Bucket.puts,
    },
  },
  other: { config: {}, bound: {} },
};

describe("a mesh part's tools and the mesh's buckets", () => {
  let bus: TestBus;
  let rt: TestRuntime;
  let host: HostClient;

  const attempt = async (module: string, input: Record<string, string>) =>
    (await request(bus.admin, toolSubject(NODE, module, "try"), input, {
      timeoutMs: 10_000,
    })) as { value?: unknown; refused?: string; message?: string };

  before(async () => {
    bus = await startTestBus({
      modules: [PART, served("other")],
      users: [{ ...HOST_USER, permissions: hostGrant({ node: NODE }) }],
    });
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    await builds.put("hello.1-aaaaaaaa", {
      module: "hello",
      build: "1-aaaaaaaa",
      status: "built",
      candidate: 1,
      bundles: [],
      log: "",
      timings: { started: new Date(0).toISOString() },
    });
    host = await startHostClient({ bus, node: NODE, modules: COMPOSED });
    rt = await startTestRuntime(bus, {
      name: "mesh-part-states-",
      modules: { [MeshPart.assigner]: { "tools.mjs": TOOLS }, other: { "tools.mjs": TOOLS } },
    });
    const serving = (s: RuntimeStatus) =>
      Object.values(s.modules).length === 2 &&
      Object.values(s.modules).every((m) => m.state === ModuleState.serving);
    await deadline(rt.statuses.until(serving), 30_000, "both modules serving");
  });

  after(async () => {
    await rt?.stop();
    await host?.stop();
    await bus?.stop();
  });

  test("the part reads the bucket its manifest reads, and writes the one it writes", async () => {
    const read = await attempt(MeshPart.assigner, {
      state: "mesh/builds",
      op: "get",
      key: "hello.1-aaaaaaaa",
    });
    assert.equal((read.value as { status?: string } | null)?.status, "built", JSON.stringify(read));
    const wrote = await attempt(MeshPart.assigner, {
      state: "mesh/puts",
      op: "put",
      key: "all.hello",
    });
    assert.equal(wrote.value, "written", JSON.stringify(wrote));
    const puts = await KvBucket.open(bus.admin, Bucket.puts);
    assert.equal((await puts.get("all.hello"))?.value.build, "1-aaaaaaaa");
  });

  test("the part may not write what it only reads, nor use a bucket its manifest does not name", async () => {
    const write = await attempt(MeshPart.assigner, {
      state: "mesh/builds",
      op: "put",
      key: "hello.9-ffffffff",
    });
    assert.equal(write.refused, ErrorCode.REFUSED, JSON.stringify(write));
    const unnamed = await attempt(MeshPart.assigner, { state: "mesh/wants", op: "get", key: "x" });
    assert.equal(unnamed.refused, ErrorCode.REFUSED, JSON.stringify(unnamed));
    assert.match(unnamed.message ?? "", /names it in neither reads nor writes/);
    const none = await attempt(MeshPart.assigner, { state: "mesh/nothing", op: "get", key: "x" });
    assert.equal(none.refused, ErrorCode.INVALID_INPUT, JSON.stringify(none));
  });

  test("another module's code naming a mesh bucket is refused, though the runtime's credential may write it", async () => {
    const put = await attempt("other", { state: "mesh/puts", op: "put", key: "all.other" });
    assert.equal(put.refused, ErrorCode.REFUSED, JSON.stringify(put));
    const puts = await KvBucket.open(bus.admin, Bucket.puts);
    assert.equal(await puts.get("all.other"), undefined);
    const get = await attempt("other", {
      state: "mesh/builds",
      op: "get",
      key: "hello.1-aaaaaaaa",
    });
    assert.equal(get.refused, ErrorCode.REFUSED, JSON.stringify(get));
  });
});
