/**
 * `mesh upgrade` refuses at once where it cannot write the mesh's own builds (decision 0201): a
 * root with no mesh's controller credential is CREDENTIAL_INVALID, naming the file and where to
 * run it, and nothing of the new version is unpacked or kept there. On a bus, as the controller,
 * it registers every shipped build and the runtime from where it is, and a second run nothing
 * new. What it does on a real mesh is `e2e/upgrade.e2e.test.ts`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { controllerGrant } from "@mesh/core";
import { readShippedParts } from "@mesh/delivery";
import { Bucket, HOST_MODULE, Principal, RUNTIME_MODULE } from "@mesh/protocol";
import { NODE_TOOLS_SOURCE, SHIPPED_PARTS } from "../../shipped.js";
import { operatorBusSuite } from "../../testing/operator-bus.js";
import { runMesh } from "../../testing/run-mesh.js";

let dir = "";
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-upgrade-verb-"));
});
after(() => rm(dir, { recursive: true, force: true }));

test("mesh upgrade where no mesh runs is refused, naming the controller's credential, and keeps nothing", async () => {
  const root = join(dir, "no-mesh");
  const run = await runMesh(["upgrade", SHIPPED_PARTS, "--root", root]);
  assert.equal(run.code, 1, run.stderr);
  assert.match(
    run.stderr,
    /controller, whose credential is not at .*no-mesh.*run it where `mesh up` runs, with --root naming its root.*\[CREDENTIAL_INVALID\]/s,
  );
  assert.doesNotMatch(run.stderr, /\n\s+at /, "no stack trace");
  const left = await readdir(root).catch((): string[] => []);
  assert.ok(!left.includes("versions") && !left.includes("upgrades"), left.join(", "));
});

describe("mesh upgrade on a bus, as the mesh's controller", () => {
  const bus = operatorBusSuite(
    {
      name: "upgrade",
      others: [{ module: Principal.controller, permissions: controllerGrant() }],
    },
    { before, after },
  );

  /** `mesh upgrade <path>` as the operator on the suite's root: what it registered. */
  const upgrade = (path: string) =>
    bus.json<{ modules: Array<{ module: string; written: boolean }> }>([
      "upgrade",
      path,
      "--root",
      bus.root,
    ]);
  /** Where the runtime is registered from (its directory source). */
  const runtimeFrom = async (): Promise<string | undefined> => {
    const runtime = (await (await KvBucket.open(bus.admin, Bucket.modules)).get(RUNTIME_MODULE))
      ?.value;
    return runtime?.source.kind === "directory" ? runtime.source.path : undefined;
  };

  /** A new mesh's folder as a checkout or the packed CLI holds it: shipped-parts and node-tools. */
  async function newMeshFolder(): Promise<string> {
    const folder = join(dir, "next");
    await cp(SHIPPED_PARTS, join(folder, "shipped-parts"), { recursive: true });
    await cp(NODE_TOOLS_SOURCE, join(folder, "node-tools"), {
      recursive: true,
      filter: (src) => !/node_modules|\.mesh$/.test(src),
    });
    return folder;
  }

  test("registers every shipped build and the runtime from where it is; again, nothing new", async () => {
    const folder = await newMeshFolder();
    const parts = await readShippedParts(SHIPPED_PARTS);
    const first = await upgrade(folder);
    assert.deepEqual(
      first.modules.map((m) => m.module).sort(),
      [...parts.parts.map((p) => p.module), RUNTIME_MODULE].sort(),
    );
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    for (const part of parts.parts) {
      const build = first.modules.find((m) => m.module === part.module);
      assert.equal(build?.written, true, `${part.module} registered`);
      const keys = await builds.keys(`${part.module}.>`);
      assert.equal(keys.length, 1, `${part.module}'s one prebuilt build: ${keys.join(", ")}`);
    }
    assert.equal(
      await runtimeFrom(),
      join(folder, "node-tools"),
      "the runtime registered in place, where the builder finds its packages",
    );
    const assigned = await (
      await KvBucket.open(bus.admin, Bucket.assignments)
    ).get(`all.${HOST_MODULE}`);
    assert.ok(assigned !== undefined, "the host build is wanted on every node");
    const again = await upgrade(folder);
    assert.deepEqual(
      again.modules.filter((m) => m.written).map((m) => m.module),
      [],
      "nothing new the second time",
    );
  });

  test("the packed CLI's .tgz is unpacked under the root, and its runtime registered from there", async () => {
    const packed = join(dir, "packed");
    await cp(join(dir, "next"), join(packed, "package"), { recursive: true });
    const tgz = join(dir, "mesh-next.tgz");
    const tar = spawnSync("tar", ["-czf", tgz, "-C", packed, "package"]);
    assert.equal(tar.status, 0, String(tar.stderr));
    const run = await upgrade(tgz);
    assert.deepEqual(
      run.modules.filter((m) => m.written).map((m) => m.module),
      [RUNTIME_MODULE],
      "the same shipped builds stand; the runtime moved",
    );
    const path = (await runtimeFrom()) ?? "";
    assert.ok(path.startsWith(join(bus.root, "upgrades")), path);
    assert.ok(path.endsWith(join("package", "node-tools")), path);
  });

  test("a path with no shipped parts is refused, naming what it looks for", async () => {
    const empty = join(dir, "empty");
    await mkdir(empty, { recursive: true });
    const run = await bus.run(["upgrade", empty, "--root", bus.root]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /holds no shipped parts .*give the new mesh's folder/s);
  });
});
