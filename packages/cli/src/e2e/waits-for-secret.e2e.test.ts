/**
 * A module assigned before its secret is set (issue 14.2), on a real mesh from `mesh up`: it is
 * not dropped but waits, says what it waits for and the command that ends the wait (in `have`
 * and in `mesh status`), and starts by itself once the secret is set — no put, no re-assign.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { Bucket, nodeModuleKey, type Have } from "@mesh/protocol";
import { meshForFile } from "../testing/mesh-for-file.js";
import { until } from "../testing/demo-mesh.js";
import { writeModuleFolder } from "../testing/module-yaml.js";
import { runMesh } from "../testing/run-mesh.js";

const NODE = "secret-1";
const fx = meshForFile({ prefix: "mesh-secret-wait", node: NODE, demo: false });

/** A module with a daemon and an own secret `token`. */
function notesModule(): Promise<string> {
  const notes = {
    module: "notes",
    description: "Keeps notes; needs its token.",
    daemon: "notes",
    ownSecrets: { token: "token.txt" },
  };
  return writeModuleFolder(fx.sources, notes, {
    daemon: "setInterval(() => undefined, 60_000);\n",
  });
}

async function mesh_(args: readonly string[], input?: string) {
  const run = await runMesh([...args, "--root", fx.root], input === undefined ? {} : { input });
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return run.stdout;
}

describe("a module assigned before its secret is set", () => {
  test("waits and says why, then starts by itself once the secret is set", async () => {
    const bus = fx.mesh.bus;
    await mesh_(["module", "add", await notesModule()]);
    await mesh_(["assign", "notes", "--all"]);
    const have = await KvBucket.open(bus, Bucket.have);
    const waiting = await until(
      async () => {
        const entry = (await have.get(nodeModuleKey(NODE, "notes")))?.value;
        return entry?.waitingFor?.what.includes("waiting for secret `token` of notes") === true
          ? entry
          : undefined;
      },
      120_000,
      "notes to say it waits for its secret",
    );
    assert.equal(waiting.health, "starting", "waiting for a secret is not failing");
    assert.match(waiting.waitingFor?.fix ?? "", /mesh secret set notes token/);
    // What needs attention may come from the assigner's summary (decision 0090): it may lag the
    // have just read by a second or so.
    await until(
      async () => (/mesh secret set notes token/.test(await mesh_(["status"])) ? true : undefined),
      60_000,
      "mesh status to say the fix",
      { explain: () => mesh_(["status"]) },
    );
    // Still wanted: nothing set it back or dropped it while it waited.
    const wants = await KvBucket.open(bus, Bucket.wants);
    assert.ok((await wants.get(nodeModuleKey(NODE, "notes")))?.value !== undefined);

    const setAt = Date.now();
    await mesh_(["secret", "set", "notes", "token"], "s3cret\n");
    const healthy = await until(
      async () => {
        const entry: Have | undefined = (await have.get(nodeModuleKey(NODE, "notes")))?.value;
        return entry?.health === "healthy" ? entry : undefined;
      },
      120_000,
      "notes to start by itself once its secret is set",
    );
    assert.equal(healthy.waitingFor, undefined);
    process.stdout.write(`# notes healthy ${Date.now() - setAt} ms after its secret was set\n`);
  });
});
