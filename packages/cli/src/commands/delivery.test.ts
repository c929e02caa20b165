/**
 * The delivery verbs as an operator runs them, end to end: the CLI as child processes with the
 * operator's grant, and `mesh indexer`, `mesh builder`, `mesh assigner` and
 * `mesh build-module typescript` as processes on their own grants, against a real bus: a folder registered and built, assigned, wanted; refusals with
 * their codes.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { credentialFor, deadline } from "@mesh/bus/testing";
import { buildGrant } from "@mesh/core";
import { partsPrincipalGrant } from "@mesh/delivery";
import { Bucket, Principal } from "@mesh/protocol";
import { rawTar } from "@mesh/bus/testing";
import { serveAssignerTools } from "../testing/assigner-tools.js";
import { operatorBusSuite } from "../testing/operator-bus.js";

const MAIN = fileURLToPath(new URL("../main.js", import.meta.url));
const NODE = "n0";

describe("delivery verbs", () => {
  const daemons: ChildProcess[] = [];
  // Registered before the bus's: the daemons end before their bus goes.
  after(async () => {
    // Each daemon stopped by its own pid, gracefully.
    await Promise.all(
      daemons.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once("exit", () => resolve());
            process.kill(child.pid as number, "SIGTERM");
          }),
      ),
    );
  });
  const bus = operatorBusSuite(
    async () => ({
      name: "delivery",
      node: NODE,
      others: [
        {
          module: Principal.delivery,
          permissions: await partsPrincipalGrant(Principal.delivery, { node: NODE }),
        },
        {
          module: Principal.assigner,
          permissions: await partsPrincipalGrant(Principal.assigner, { node: NODE }),
        },
        { module: Principal.build, permissions: buildGrant({ node: NODE }) },
      ],
    }),
    { before, after },
  );

  before(() => {
    for (const [daemon, credential] of [
      ["indexer", Principal.delivery],
      ["builder", Principal.delivery],
      ["assigner", Principal.assigner],
      ["build-module typescript", Principal.build],
    ] as const) {
      daemons.push(
        spawn(
          process.execPath,
          [MAIN, ...daemon.split(" "), "--credential", bus.credentialOf(credential)],
          { stdio: "ignore" },
        ),
      );
    }
  });

  test("module add --wait follows the build; assign --all makes a want; wants, builds and module list show it", async () => {
    const src = join(bus.dir, "hello");
    await mkdir(join(src, "src"), { recursive: true });
    await writeFile(
      join(src, "mesh.yaml"),
      "module: hello\nbundles:\n  - name: tools\n    language: typescript\n    entrypoints: [src/tools.ts]\n    loads: [src/tools.ts]\n",
    );
    await writeFile(
      join(src, "src/tools.ts"),
      "export const tools = { greet: (n: string) => `Hello, ${n}` };\n",
    );
    const add = await bus.run(["module", "add", src, "--wait", "--json"]);
    assert.equal(add.code, 0, add.stderr + add.stdout);
    const added = JSON.parse(add.stdout) as { build: { build: string; status: string } };
    assert.equal(added.build.status, "built");

    await (
      await KvBucket.open(bus.admin, Bucket.presence)
    ).put("n1", {
      node: "n1",
      facts: { hostname: "n1", os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "k",
      heartbeat: new Date().toISOString(),
    });
    const assign = await bus.run(["assign", "hello", "--all"]);
    assert.equal(assign.code, 0, assign.stderr);
    const wantsBucket = await KvBucket.open(bus.admin, Bucket.wants);
    const ac = new AbortController();
    await deadline(
      (async () => {
        for await (const e of wantsBucket.watch({ key: "n1.hello", signal: ac.signal }))
          if (e.type === "put") return;
      })(),
      30_000,
      "the assigner's want for n1.hello",
    ).finally(() => ac.abort());
    const wants = await bus.run(["wants", "--json"]);
    const parsed = JSON.parse(wants.stdout) as {
      wants: Record<string, { build: string; rule: string }>;
    };
    assert.equal(parsed.wants["n1.hello"]?.build, added.build.build);
    assert.equal(parsed.wants["n1.hello"]?.rule, "newest");

    const list = await bus.run(["module", "list"]);
    assert.match(list.stdout, new RegExp(`hello .* ${added.build.build} built`));
    const builds = await bus.run(["builds", "hello", "--json"]);
    assert.equal((JSON.parse(builds.stdout) as { builds: unknown[] }).builds.length, 1);
  });

  test("a bad manifest is refused with every problem and exit code 3", async () => {
    const src = join(bus.dir, "bad");
    await mkdir(src, { recursive: true });
    await writeFile(join(src, "mesh.yaml"), "module: Bad\nbundles: 3\n");
    const run = await bus.run(["module", "add", src, "--json"]);
    assert.equal(run.code, 3);
    const out = JSON.parse(run.stdout) as { error: { code: string; message: string } };
    assert.equal(out.error.code, "MANIFEST_INVALID");
    assert.match(out.error.message, /module/);
    assert.match(out.error.message, /bundles/);
  });

  test("a hostile archive is refused with exit 3 and ARCHIVE_REFUSED naming each bad entry, never INTERNAL", async () => {
    const file = join(bus.dir, "hostile.tar.gz");
    await writeFile(
      file,
      rawTar([
        { name: "mesh.yaml", type: "0", data: "module: evil\n" },
        { name: "/tmp/mesh-cli-absolute.txt", type: "0", data: "x" },
        { name: "dev/null", type: "3" },
      ]),
    );
    const run = await bus.run(["module", "add", file]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /\[ARCHIVE_REFUSED\]/);
    assert.match(run.stderr, /"\/tmp\/mesh-cli-absolute.txt" is an absolute path/);
    assert.match(run.stderr, /"dev\/null" is a device node/);
    assert.doesNotMatch(run.stderr, /INTERNAL|\n\s+at /);
  });

  test("a put with no assigner tool served, a put to a build that does not exist, and an answer to no ask, are NOT_FOUND", async () => {
    const error = (run: { stdout: string }) =>
      (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
    // mesh put calls the assigner's tool (decision 0190): nothing serves it yet.
    const unserved = error(await bus.run(["put", "hello", "9-deadbeef", "--json"]));
    assert.equal(unserved.code, "NOT_FOUND");
    assert.match(unserved.message, /no node serves mesh-assigner\/put/);
    {
      await using _tools = await serveAssignerTools({
        admin: bus.admin,
        credential: credentialFor(bus.server, bus.server.admin, { node: NODE, module: "x" }),
        node: NODE,
      });
      const missing = error(await bus.run(["put", "hello", "9-deadbeef", "--json"]));
      assert.equal(missing.code, "NOT_FOUND");
      assert.match(missing.message, /hello has no build "9-deadbeef"/);
    }
    const answer = await bus.run(["answer", "w-nothing", "yes", "--json"]);
    assert.equal(
      (JSON.parse(answer.stdout) as { error: { code: string } }).error.code,
      "NOT_FOUND",
    );
    const usage = await bus.run(["assign", "hello"]);
    assert.equal(usage.code, 2);
  });
});
