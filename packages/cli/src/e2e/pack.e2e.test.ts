/**
 * The installable mesh (`npm run pack`): the CLI's tarball installed into an empty temporary
 * prefix works outside the repository — `mesh up --demo --exit-when-ready` in an empty folder
 * brings up the demo from the examples inside the package. The tarballs hold no test.
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { freePort } from "@mesh/bus/testing";
import { ok, packAndInstall, run, type Packed } from "../testing/packed.js";

let packed: Packed;

before(async () => {
  packed = await packAndInstall();
});

after(async () => {
  await packed?.[Symbol.asyncDispose]();
});

describe("the packed mesh, installed into an empty prefix", () => {
  test("the packages carry a license, and none of ours a test", async () => {
    for (const tarball of [packed.tarballs.cli, packed.tarballs.sdk]) {
      const listed = ok(await run("tar", ["tzf", tarball]), "tar tzf").stdout.split("\n");
      // Ours: everything but the npm packages bundled inside, whose contents are their authors'.
      const ours = listed.filter(
        (f) =>
          !f.startsWith("package/node_modules/") || f.startsWith("package/node_modules/@mesh/"),
      );
      assert.deepEqual(
        ours.filter((f) => /\.test\.|\/test-support\/|\/testing\//.test(f)),
        [],
      );
      assert.ok(listed.includes("package/LICENSE"), `${tarball} has a license`);
    }
  });

  test("mesh up --demo --exit-when-ready in an empty folder brings up the demo", async () => {
    const empty = join(packed.scratch, "empty");
    await mkdir(empty);
    const port = await freePort();
    const r = await run(
      packed.mesh,
      ["up", "--demo", "--exit-when-ready", "--port", String(port), "--node", "packed"],
      { cwd: empty, env: packed.env, ms: 900_000 },
    );
    ok(r, "mesh up --demo");
    assert.match(r.stdout, /The mesh is up/);
  });
});
