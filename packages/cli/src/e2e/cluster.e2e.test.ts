/**
 * `mesh up --demo --cluster 3` (issue 13.1): three nats-servers with routes, every stream of the
 * layout and every module state with three copies. kill -9 of the server that leads counter's
 * state under a constant tool-call load: the tools answer again once the mesh's processes have
 * reconnected to the others, counter's kept total never goes back (no acknowledged write is
 * lost) and moves again, nothing the mesh holds changes, and the bus keeper starts the server
 * again. The failed calls are counted in the output.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MeshBus, streamPlacement } from "@mesh/bus";
import { freePort } from "@mesh/bus/testing";
import { Bucket, Principal, kvStreamName } from "@mesh/protocol";
import { runFault } from "../testing/chaos.js";
import { DemoMesh, until, type UpReport } from "../testing/demo-mesh.js";

const NODE = "cluster-1";
let mesh: DemoMesh | undefined;
let report: UpReport | undefined;
let admin: MeshBus | undefined;
let root = "";

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mesh-cluster-"));
  mesh = new DemoMesh({ root, port: await freePort(), node: NODE, args: ["--cluster", "3"] });
  report = await mesh.up();
  admin = await MeshBus.connectWithFile(join(root, "credentials", `${Principal.controller}.json`), {
    say: () => undefined,
  });
});

after(async () => {
  await admin?.close();
  await mesh?.stop();
  await rm(root, { recursive: true, force: true });
});

describe("mesh up --cluster 3", () => {
  test("runs three servers; the layout and counter's state have three copies", async () => {
    assert.ok(report !== undefined && admin !== undefined);
    assert.equal(report.bus.servers.length, 3);
    assert.equal(admin.credential.servers.length, 3, "credentials name every server");
    for (const stream of [kvStreamName(Bucket.wants), kvStreamName("counter_counts")]) {
      assert.equal((await streamPlacement(admin, stream)).replicas, 3, stream);
    }
  });

  test("kill -9 of the server leading counter's state: tools answer again, nothing acknowledged is lost, the server comes back", async () => {
    assert.ok(mesh !== undefined && report !== undefined && admin !== undefined);
    const { leader } = await streamPlacement(admin, kvStreamName("counter_counts"));
    const index = Number(/-s(\d+)$/.exec(leader ?? "")?.[1] ?? "1") - 1;
    const victim = report.bus.servers[index]?.pid;
    assert.ok(victim !== undefined, `the leader ${String(leader)} is one of the mesh's servers`);
    const result = await runFault(mesh, {
      name: "cluster-server",
      what: `kill -9 of nats-server ${index + 1} of 3 (the leader of counter's state)`,
      callsMayFail: true,
      inject: () => {
        process.kill(victim, "SIGKILL");
        return Promise.resolve();
      },
    });
    process.stdout.write(
      `# ${result.fault}: ${result.failedCalls} failed calls of ${result.failedCalls + result.answeredCalls}, ` +
        `whole again after ${result.backAfterMs} ms\n`,
    );
    assert.equal(result.lostWrites, 0, "counter's kept total went back");
    assert.deepEqual(
      result.changed,
      [],
      `what the mesh holds changed: ${JSON.stringify(result.changedDetail).slice(0, 4000)}`,
    );
    // The runtime may run twice: a spare stands by beside the serving one (process-main.ts).
    const { ["nats-server"]: servers, runtime: _spare, ...others } = result.duplicates;
    assert.deepEqual(others, {}, "a process of the mesh runs twice");
    assert.ok(servers === undefined || servers <= 3, "more than three servers run");
    await until(
      async () => ((await mesh?.pidsOf("nats-server"))?.length === 3 ? true : undefined),
      60_000,
      "the bus keeper to start the killed server again",
    );
  });
});
