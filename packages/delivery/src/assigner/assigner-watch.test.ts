/**
 * A watch of the assigner's that ends (its bucket deleted and created again) is noticed, said,
 * and watched again with what it missed (issue 14.5): the assigner stays running and hears.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KvBucket, MeshBus, ensureLayout } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { Bucket, Principal } from "@mesh/protocol";
import { Assigner } from "./assigner.js";
import { presenceOf } from "./test-fleet.js";
import { assignerBus } from "./test-assigner.js";
import { natsOf } from "@mesh/bus/internal";

const fleet = assignerBus();

describe("assigner on a real bus: a watch that ends (issue 14.5)", () => {
  it("a bucket deleted and created again under a running assigner: it says so, keeps running, and a new node still gets a want", async () => {
    await fleet.freshLayout();
    const ids = await fleet.seed({ nodes: 1 });
    const lines: string[] = [];
    const bus = await MeshBus.connect(fleet.credential(Principal.assigner));
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
      const w = await fleet.wants();
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
      await (await natsOf(fleet.admin).kvm.open(Bucket.presence)).destroy();
      await ensureLayout(fleet.admin);
      const presence = await KvBucket.open(fleet.admin, Bucket.presence);
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
