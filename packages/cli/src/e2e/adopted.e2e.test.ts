/**
 * Issue 14.12 on a real mesh from `mesh up`: `--adopted` and `--account NAME` reach the node's
 * presence and `mesh status`; a module with a filter, assigned everywhere, is wanted on the
 * adopted machine with a want that says it is filtered there, and is no standing difference.
 */
import assert from "node:assert/strict";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { freePort } from "@mesh/bus/testing";
import { runMesh, startMesh, type MeshProcess } from "../testing/run-mesh.js";
import { statusOf, until as waitUntil } from "../testing/until.js";

const HELLO = fileURLToPath(new URL("../../../../examples/modules/hello", import.meta.url));
const NODE = "adopted-one";

let root: string;
let sources: string;
let up: MeshProcess;

async function meshJson<T>(args: readonly string[]): Promise<T> {
  const run = await runMesh([...args, "--root", root, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

/** Polls `probe` until it gives something; a timeout carries `mesh status`. */
const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(root) });

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-adopted-root-"));
  sources = await mkdtemp(join(tmpdir(), "mesh-adopted-sources-"));
  const port = await freePort();
  up = startMesh([
    "up",
    "--root",
    root,
    "--port",
    String(port),
    "--node",
    NODE,
    "--no-runtime",
    "--adopted",
    "--account",
    "root",
    "--json",
  ]);
  await up.stdoutWhen((out) => {
    try {
      JSON.parse(out);
      return true;
    } catch {
      return false;
    }
  }, 60_000);
});

after(async () => {
  process.kill(up.pid, "SIGINT");
  await up.ended(60_000).catch(() => undefined);
  await up[Symbol.asyncDispose]();
  await rm(root, { recursive: true, force: true });
  await rm(sources, { recursive: true, force: true });
});

describe("an adopted machine with an operator account", () => {
  test("mesh up --adopted --account: the presence says so and mesh status shows it", async () => {
    type Status = { nodes: Array<{ node: string; facts: Record<string, unknown> | null }> };
    const node = await until(
      async () =>
        (await meshJson<Status>(["status"])).nodes.find((n) => n.node === NODE && n.facts !== null),
      30_000,
      "the node's presence",
    );
    assert.equal(node.facts?.["adopted"], true);
    assert.equal(node.facts?.["account"], "root");
    const plain = await runMesh(["status", "--root", root]);
    assert.match(plain.stdout, new RegExp(`${NODE}\\s+present\\s+.*adopted, account root`));
  });

  test("a module a filter leaves out there is wanted with a reason that says so, and no difference", async () => {
    const folder = join(sources, "hello");
    await cp(HELLO, folder, { recursive: true });
    const manifest = await readFile(join(folder, "mesh.yaml"), "utf8");
    await writeFile(
      join(folder, "mesh.yaml"),
      `${manifest}filter:\n  description: sets up the machine's greeting banner\n`,
    );
    await meshJson(["module", "add", folder, "--wait"]);
    await meshJson(["assign", "hello", "--all"]);
    type Wants = { wants: Record<string, { rule: string; reason: string }> };
    const want = await until(
      async () => (await meshJson<Wants>(["wants"])).wants[`${NODE}.hello`],
      60_000,
      "hello's want on the adopted node",
    );
    assert.equal(want.rule, "checked");
    assert.match(
      want.reason,
      new RegExp(`^filtered on ${NODE}, so not run there: ${NODE} is adopted`),
    );
    const differences = await meshJson<{ differences: Record<string, unknown> }>(["differences"]);
    assert.equal(differences.differences[`${NODE}.hello`], undefined, JSON.stringify(differences));
  });
});
