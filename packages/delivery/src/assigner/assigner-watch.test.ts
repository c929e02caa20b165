/**
 * A watch of the assigner's that ends (its bucket deleted and created again) is noticed, said,
 * and watched again with what it missed (issue 14.5): the assigner stays running and hears.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KvBucket, MeshBus, ensureLayout } from "@mesh/bus";
import { credentialFor, deadline, startTestServer, type TestServer } from "@mesh/bus/testing";
import { assignerGrant } from "@mesh/core";
import { Bucket, Principal } from "@mesh/protocol";
import { Assigner } from "./assigner.js";
import { NODE, emptyLayout, presenceOf, seedFleet } from "./test-fleet.js";
import { natsOf } from "@mesh/bus/internal";

let server: TestServer;
let admin: MeshBus;
const password = "assigner-password-for-tests";

before(async () => {
  server = await startTestServer({
    users: [{ user: "assigner", password, permissions: assignerGrant({ node: NODE }) }],
  });
  admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: NODE, module: "controller" }),
  );
});
after(async () => {
  await admin?.close();
  await server?.stop();
});

const assignerCredential = () =>
  credentialFor(server, { user: "assigner", password }, { node: NODE, module: Principal.assigner });
const wants = () => KvBucket.open(admin, Bucket.wants);

describe("assigner on a real bus: a watch that ends (issue 14.5)", () => {
  it("a bucket deleted and created again under a running assigner: it says so, keeps running, and a new node still gets a want", async () => {
    await emptyLayout(admin);
    const ids = await seedFleet(admin, { nodes: 1 });
    const lines: string[] = [];
    const bus = await MeshBus.connect(assignerCredential());
    const stop = new AbortController();
    const assigner = await Assigner.create({
      bus,
      log: (l) => {
        if (process.env.MESH_TEST_LOG === "1") console.error(l);
        lines.push(l);
      },
    });
    const running = assigner.run({ signal: stop.signal });
    running.catch(() => undefined);
    try {
      const w = await wants();
      const wanted = (node: string) =>
        deadline(
          (async () => {
            while ((await w.get(`${node}.hello`))?.value.build !== ids[0])
              await new Promise((r) => setTimeout(r, 200));
          })(),
          60_000,
          `a want on ${node}`,
        );
      await wanted("n1");
      // Deleted and created again, as `mesh up` makes a missing bucket.
      await (await natsOf(admin).kvm.open(Bucket.presence)).destroy();
      await ensureLayout(admin);
      const presence = await KvBucket.open(admin, Bucket.presence);
      await presence.put("n1", presenceOf("n1"));
      await presence.put("n2", presenceOf("n2"));
      await wanted("n2");
      assert.equal(assigner.state, "running");
      assert.ok(
        lines.some((l) => /watching mesh-presence: the watch ended/.test(l)),
        lines.join("\n"),
      );
      assert.ok(
        lines.some((l) => /the watch of mesh-presence is back/.test(l)),
        lines.join("\n"),
      );
    } finally {
      stop.abort();
      await running.catch(() => undefined);
      await bus.close();
    }
  });
});
