import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { mcpGrant, mcpPrincipal } from "./mcp.js";
import { can, hears } from "./test-support.js";

/** Everything the mesh's buckets hold, as the client reads and writes them. */
const READS_AND_WRITES = [
  "$JS.API.DIRECT.GET.KV_mesh-config.$KV.mesh-config.hello.greeting",
  "$JS.API.DIRECT.GET.KV_mesh-wants.$KV.mesh-wants.n1.hello",
  "$JS.API.DIRECT.GET.KV_mesh-secrets.$KV.mesh-secrets.hello.token",
  "$KV.mesh-assignments.all.hello",
  "$KV.mesh-config.hello.greeting",
  "$KV.mesh-modules.hello",
  "$JS.API.STREAM.NAMES",
  "$JS.API.INFO",
  "mesh.controller.join-token",
  "mesh.controller.secret-set",
  "mesh.conditions.hello.x",
];

describe("mcpGrant", () => {
  test("calls and discovers every tool, and does nothing else an operator does", () => {
    const p = mcpGrant({ node: "laptop" });
    assert.ok(can(p, "mesh.tools.n1.hello.greet"));
    assert.ok(can(p, "$SRV.INFO"));
    assert.ok(can(p, "$SRV.PING.hello"));
    for (const subject of READS_AND_WRITES) assert.equal(can(p, subject), false, subject);
  });

  test("hears only its own inbox, and serves nothing", () => {
    const p = mcpGrant({ node: "laptop" });
    assert.ok(hears(p, "_INBOX.laptop.mcp.abc.1"));
    assert.equal(hears(p, "_INBOX.laptop.operator.abc.1"), false);
    assert.equal(hears(p, "_INBOX.abc.1"), false);
    assert.equal(hears(p, "mesh.tools.laptop.hello.greet"), false);
    assert.equal(p.allowResponses, undefined);
  });

  test("watches wants and what nodes run, to hear when tools move", () => {
    const p = mcpGrant({ node: "laptop" });
    assert.ok(can(p, "$JS.API.CONSUMER.CREATE.KV_mesh-have.oc_X_1.$KV.mesh-have.>"));
    assert.ok(can(p, "$JS.API.CONSUMER.CREATE.KV_mesh-wants.oc_X_1.$KV.mesh-wants.>"));
    assert.ok(can(p, "$JS.FC.KV_mesh-have.x"));
    assert.equal(can(p, "$JS.API.CONSUMER.CREATE.KV_mesh-config.oc_X_1.$KV.mesh-config.>"), false);
  });

  test("with modules, only those modules' tools and services", () => {
    const p = mcpGrant({ node: "laptop", modules: ["hello", "notes"] });
    assert.ok(can(p, "mesh.tools.n1.hello.greet"));
    assert.ok(can(p, "mesh.tools.n2.notes.add"));
    assert.ok(can(p, "$SRV.INFO.hello"));
    assert.ok(can(p, "$SRV.PING.notes"));
    assert.equal(can(p, "mesh.tools.n1.counter.add"), false);
    assert.equal(can(p, "$SRV.INFO"), false, "mesh-wide discovery would list every module");
    assert.equal(can(p, "$SRV.INFO.counter"), false);
  });

  test("reads build records (of its modules only) and manifests by digest, to offer them as resources", () => {
    const every = mcpGrant({ node: "laptop" });
    const some = mcpGrant({ node: "laptop", modules: ["hello"] });
    const build = (m: string) => `$JS.API.DIRECT.GET.KV_mesh-builds.$KV.mesh-builds.${m}.1-abc`;
    const manifest = "$JS.API.DIRECT.GET.KV_mesh-manifests.$KV.mesh-manifests.ab12";
    assert.ok(can(every, build("counter")));
    assert.ok(can(some, build("hello")));
    assert.equal(can(some, build("counter")), false);
    for (const p of [every, some]) {
      assert.ok(can(p, manifest));
      // A get by key in the subject only: no listing, no write, no stream-wide read.
      assert.equal(can(p, "$JS.API.DIRECT.GET.KV_mesh-manifests"), false);
      assert.equal(can(p, "$JS.API.STREAM.MSG.GET.KV_mesh-builds"), false);
      assert.equal(can(p, "$KV.mesh-builds.hello.1-abc"), false);
      assert.equal(
        can(p, "$JS.API.CONSUMER.CREATE.KV_mesh-manifests.oc_X_1.$KV.mesh-manifests.>"),
        false,
      );
    }
  });

  test("narrowed: its own principal and inbox, the same for the same modules in any order", () => {
    const principal = mcpPrincipal(["notes", "hello"]);
    assert.match(principal, /^mcp-[0-9a-f]{12}$/);
    assert.equal(mcpPrincipal(["hello", "notes", "hello"]), principal);
    assert.notEqual(mcpPrincipal(["hello"]), principal);
    assert.equal(mcpPrincipal(), "mcp");
    const narrowed = mcpGrant({ node: "laptop", modules: ["notes", "hello"] });
    assert.deepEqual(narrowed, mcpGrant({ node: "laptop", modules: ["hello", "notes"] }));
    assert.ok(hears(narrowed, `_INBOX.laptop.${principal}.abc.1`));
    assert.equal(hears(narrowed, "_INBOX.laptop.mcp.abc.1"), false, "the full mcp's replies");
    const full = mcpGrant({ node: "laptop" });
    assert.equal(hears(full, `_INBOX.laptop.${principal}.abc.1`), false);
  });

  test("narrowed to one module: another module's tool subject on any node is not granted", () => {
    const p = mcpGrant({ node: "laptop", modules: ["hello"] });
    for (const node of ["laptop", "n2"]) {
      assert.ok(can(p, `mesh.tools.${node}.hello.greet`));
      assert.equal(can(p, `mesh.tools.${node}.notes.add`), false);
      assert.equal(can(p, `mesh.tools.${node}.hello-two.greet`), false, "a module named alike");
    }
    assert.equal(can(p, "$SRV.PING"), false);
    assert.equal(can(p, "$SRV.STATS.hello"), false);
  });

  test("an empty allow-set is a usage error", () => {
    assert.throws(
      () => mcpGrant({ node: "laptop", modules: [] }),
      (error: unknown) => isMeshError(error, ErrorCode.USAGE),
    );
  });

  test("a module that is not a name is refused", () => {
    assert.throws(
      () => mcpGrant({ node: "laptop", modules: ["hello.>"] }),
      (error: unknown) => isMeshError(error, ErrorCode.INVALID_NAME),
    );
  });
});
