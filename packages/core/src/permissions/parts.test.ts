import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { meshResourceRights, partGrant } from "./parts.js";
import { moduleGrant, runtimeGrant } from "../permissions.js";
import { toPermissions } from "./rights.js";
import { can, hears, kv } from "./test-support.js";

const granted = (ref: string, direction: "read" | "write") => {
  const rights = meshResourceRights(ref, direction);
  return rights === undefined ? undefined : toPermissions(rights);
};

describe("meshResourceRights (decision 0122)", () => {
  const cases: {
    ref: string;
    direction: "read" | "write";
    allows: readonly string[];
    refuses: readonly string[];
  }[] = [
    {
      ref: "mesh/wants",
      direction: "read",
      allows: [kv.get("mesh-wants", "n1.hello"), kv.watch("mesh-wants")],
      refuses: [kv.put("mesh-wants", "n1.hello"), kv.get("mesh-have", "n1.hello")],
    },
    {
      ref: "mesh/wants",
      direction: "write",
      allows: [kv.put("mesh-wants", "n1.hello"), kv.watch("mesh-wants")],
      refuses: [kv.put("mesh-compositions", "n1")],
    },
    {
      ref: "mesh/artifacts",
      direction: "write",
      allows: ["$O.mesh-artifacts.C.nuid123", "$JS.API.STREAM.PURGE.OBJ_mesh-artifacts"],
      refuses: [kv.put("mesh-wants", "a.b")],
    },
    {
      ref: "mesh/conditions",
      direction: "read",
      allows: ["$JS.API.CONSUMER.CREATE.mesh-conditions.oc_1.mesh.conditions.>"],
      refuses: ["mesh.conditions.hello.said"],
    },
    {
      ref: "mesh/build",
      direction: "write",
      allows: ["mesh.build.typescript"],
      refuses: ["mesh.buildx"],
    },
  ];
  for (const c of cases) {
    test(`${c.direction} ${c.ref}`, () => {
      const p = granted(c.ref, c.direction);
      assert.ok(p !== undefined);
      for (const subject of c.allows) assert.ok(can(p, subject), subject);
      for (const subject of c.refuses) assert.equal(can(p, subject), false, subject);
    });
  }

  test("no rights for what the mesh has not, the secrets, or the wrong direction", () => {
    for (const [ref, direction] of [
      ["mesh/nope", "read"],
      ["mesh/secrets", "read"],
      ["mesh/conditions", "write"],
      ["mesh/build", "read"],
      ["hello/counts", "read"],
    ] as const) {
      assert.equal(meshResourceRights(ref, direction), undefined, `${direction} ${ref}`);
    }
  });
});

describe("partGrant", () => {
  const p = partGrant({
    node: "n0",
    principal: "assigner",
    parts: [{ module: "mesh-assigner", reads: ["mesh/have"], writes: ["mesh/wants"] }],
  });

  test("exactly what the manifest names, and its principal's own conditions, keeps and inbox", () => {
    assert.ok(can(p, kv.watch("mesh-have")));
    assert.equal(can(p, kv.put("mesh-have", "n1.hello")), false);
    assert.ok(can(p, kv.put("mesh-wants", "n1.hello")));
    assert.equal(can(p, kv.get("mesh-modules", "hello")), false, "not named in the manifest");
    assert.ok(can(p, "mesh.conditions.assigner.set-back"));
    assert.ok(can(p, "$JS.API.CONSUMER.CREATE.mesh-conditions.oc_1.mesh.conditions.assigner.>"));
    assert.equal(can(p, "$JS.API.CONSUMER.CREATE.mesh-conditions.oc_1.mesh.conditions.>"), false);
    assert.ok(can(p, "mesh.keeps.n0.assigner"));
    assert.ok(hears(p, "_INBOX.n0.assigner.x"));
  });

  test("refuses a module that is not a part, and a name it has no rights for", () => {
    const refused = (parts: Parameters<typeof partGrant>[0]["parts"]) => () =>
      partGrant({ node: "n0", principal: "assigner", parts });
    const internal = (e: unknown) => e instanceof MeshError && e.code === ErrorCode.INTERNAL;
    assert.throws(refused([{ module: "hello", reads: ["mesh/have"] }]), internal);
    assert.throws(refused([{ module: "mesh-assigner", reads: ["mesh/secrets"] }]), internal);
    assert.throws(refused([{ module: "mesh-assigner", reads: ["hello/counts"] }]), internal);
  });
});

/** A part run as a module by its host (decision 0190): its grant comes through moduleGrant. */
describe("a part's module grant and the runtime's serving its tools", () => {
  const assigner = {
    module: "mesh-assigner",
    states: [],
    reads: ["mesh/have", "mesh/builds"],
    writes: ["mesh/wants", "mesh/puts"],
    calls: [],
    bundles: [{ name: "tools", language: "typescript", entrypoints: ["t.ts"], loads: ["t.ts"] }],
  };

  test("the part's process is granted what its manifest names, as the module, with no problem", () => {
    const { permissions: p, problems } = moduleGrant({
      node: "n0",
      manifest: assigner,
      owners: {},
    });
    assert.deepEqual(problems, []);
    assert.ok(can(p, kv.watch("mesh-have")));
    assert.equal(can(p, kv.put("mesh-have", "n1.hello")), false);
    assert.ok(can(p, kv.put("mesh-wants", "n1.hello")));
    assert.equal(can(p, kv.get("mesh-modules", "hello")), false, "not named in the manifest");
    assert.ok(can(p, "mesh.conditions.mesh-assigner.set-back"), "its conditions as the module");
    assert.equal(can(p, "mesh.conditions.assigner.set-back"), false);
    assert.ok(can(p, "mesh.keeps.n0.mesh-assigner"));
    assert.ok(hears(p, "_INBOX.n0.mesh-assigner.x"));
  });

  test("the runtime serving the part's tools may use what the part's manifest names", () => {
    const { permissions: p, problems } = runtimeGrant({
      node: "n0",
      modules: [assigner],
      owners: {},
    });
    assert.deepEqual(problems, []);
    assert.ok(can(p, kv.put("mesh-puts", "all.hello")));
    assert.ok(can(p, kv.get("mesh-builds", "hello.1-a")));
    assert.ok(can(p, "mesh.tools.n0.mesh-assigner.put") === false, "it serves, never calls");
    assert.ok(hears(p, "mesh.tools.n0.mesh-assigner.put"));
  });

  test("another module naming a mesh bucket is granted nothing of it, and says so", () => {
    const { permissions: p, problems } = moduleGrant({
      node: "n0",
      manifest: { ...assigner, module: "hello", writes: ["mesh/wants"] },
      owners: {},
    });
    assert.equal(can(p, kv.put("mesh-wants", "n1.hello")), false);
    assert.equal(can(p, kv.watch("mesh-have")), false);
    assert.deepEqual(
      problems.map((x) => [x.read, x.reason]),
      [
        ["mesh/builds", "unknown-module"],
        ["mesh/have", "unknown-module"],
        ["mesh/wants", "unknown-module"],
      ],
    );
  });
});
