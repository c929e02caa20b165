/**
 * `mesh upgrade` refuses at once where it cannot write the mesh's own builds (decision 0201): a
 * root with no mesh's controller credential is CREDENTIAL_INVALID, naming the file and where to
 * run it, and nothing of the new version is unpacked or kept there. What it does on a real mesh
 * is `e2e/upgrade.e2e.test.ts`.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { SHIPPED_PARTS } from "../../shipped.js";
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
