/**
 * `mesh join` as a new machine runs it (the built CLI as a child process), against a real bus and
 * a controller in this process: a token from `mesh join-token` makes a host credential that reads
 * its own node's composition and not another's; the token works once; a root that joined joins
 * again without a token and runs its host, which says it is present.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Bucket, Env, ErrorCode, isMeshError } from "@mesh/protocol";
import { KvBucket, MeshBus, readCredential, writeCredential } from "@mesh/bus";
import { deadline, type TestServer } from "@mesh/bus/testing";
import { startMesh, type Mesh } from "@mesh/controller/testing";
import { runMesh } from "../../testing/run-mesh.js";

const MAIN = fileURLToPath(new URL("../../main.js", import.meta.url));

describe("mesh join", () => {
  let server: TestServer;
  let admin: MeshBus;
  let mesh: Mesh;
  let dir: string;
  let operator: string;

  const token = async (): Promise<string> => {
    const run = await runMesh(["join-token", "--credential", operator, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    return (JSON.parse(run.stdout) as { token: string }).token;
  };

  before(async () => {
    // The controller fixture: a real bus with the layout, and a controller running on it.
    mesh = await startMesh();
    await mesh.startController();
    ({ server, admin, dir } = mesh);
    operator = join(dir, "operator.json");
    await writeCredential(operator, mesh.operator);
  });

  after(() => mesh?.[Symbol.asyncDispose]());

  it("--no-run joins with a token: a 0600 credential that reads its own composition only; the token works once", async () => {
    const t = await token();
    const root = join(dir, "n5");
    const run = await runMesh([
      "join",
      server.url,
      "--token",
      t,
      "--node",
      "n5",
      "--root",
      root,
      "--no-run",
      "--json",
    ]);
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const report = JSON.parse(run.stdout) as { credential: string; joined: boolean };
    assert.equal(report.credential, join(root, "credentials", "host.json"));
    assert.equal(report.joined, true);
    assert.equal((await stat(report.credential)).mode & 0o777, 0o600);
    assert.equal(((await stat(join(root, "node.key"))).mode & 0o077) === 0, true);

    const credential = await readCredential(report.credential);
    assert.equal(credential.user, "n5.host");
    const host = await MeshBus.connect(credential);
    try {
      const composed = await KvBucket.open(host, Bucket.composed);
      assert.equal(await composed.get("n5"), undefined, "its own composition: readable (none yet)");
      await assert.rejects(
        composed.get("n6"),
        (e) => isMeshError(e, ErrorCode.PERMISSION_DENIED),
        "another node's composition",
      );
    } finally {
      await host.close();
    }

    const again = await runMesh([
      "join",
      server.url,
      "--token",
      t,
      "--node",
      "n6",
      "--root",
      join(dir, "n6"),
      "--no-run",
      "--json",
    ]);
    assert.equal(again.code, 3, again.stderr + again.stdout);
    const refusal = (JSON.parse(again.stdout) as { error: { code: string; message: string } })
      .error;
    assert.equal(refusal.code, "REFUSED");
    assert.match(refusal.message, /mesh join-token/, "says how to get a new token");
  });

  it("a root that joined joins again without a token and runs its host until SIGINT; --adopted and --account reach its presence (issue 14.12)", async () => {
    const root = join(dir, "n7");
    const first = await runMesh([
      "join",
      server.url,
      "--token",
      await token(),
      "--node",
      "n7",
      "--root",
      root,
      "--no-run",
    ]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.trim(), join(root, "credentials", "host.json"));

    const presence = await KvBucket.open(admin, Bucket.presence);
    const ac = new AbortController();
    const present = deadline(
      (async () => {
        for await (const e of presence.watch({ key: "n7", signal: ac.signal }))
          if (e.type === "put") return e.value;
        return undefined;
      })(),
      30_000,
      "n7's host saying it is present",
    ).finally(() => ac.abort());
    const child = spawn(
      process.execPath,
      [
        MAIN,
        "join",
        server.url,
        ...["--node", "n7", "--root", root],
        ...["--adopted", "--account", userInfo().username],
      ],
      {
        env: { ...process.env, [Env.credential]: "" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      const seen = await present;
      assert.equal(seen?.node, "n7");
      assert.equal(seen?.facts.adopted, true, JSON.stringify(seen));
      assert.equal(seen?.facts.account, userInfo().username);
      process.kill(child.pid as number, "SIGINT");
      assert.equal(
        await deadline(exited, 20_000, "mesh join's host stopping on SIGINT").catch(
          (error: unknown) => {
            throw new Error(`${(error as Error).message}; its stderr:\n${err}`);
          },
        ),
        0,
        err,
      );
    } finally {
      // Whatever failed, the child started here does not outlive the test.
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    assert.match(err, /already joined/);
  });

  it("without a token on a root that never joined: USAGE, exit 2", async () => {
    const run = await runMesh([
      "join",
      server.url,
      "--node",
      "n8",
      "--root",
      join(dir, "n8"),
      "--no-run",
    ]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /needs --token/);
  });
});
