/**
 * Issue 27: `mesh mcp`'s catalogue followed mesh-wants and mesh-have with watches of its own, and
 * one that ended (a server stalled: the watch notices within 10 s and ends) was never watched
 * again: agents saw the tools of before for good. It follows through the bus mirror now.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { KvBucket, MeshBus, ensureLayout } from "@mesh/bus";
import { credentialFor, serveEchoOnRacks, startTestServer, waitFor } from "@mesh/bus/testing";
import { Bucket, nodeModuleKey } from "@mesh/protocol";
import { ToolCatalogue } from "./tool-catalogue.js";

test("the catalogue resumes after its watch is stalled (the server paused) and lists a module assigned meanwhile", async (t) => {
  const server = await startTestServer();
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "n0", module: "controller" }),
  );
  const logged: string[] = [];
  let catalogue: ToolCatalogue | undefined;
  try {
    await ensureLayout(admin);
    catalogue = await ToolCatalogue.start({
      bus: admin,
      burstMs: [100, 500, 1_500],
      log: (line) => logged.push(line),
    });
    assert.deepEqual(catalogue.tools, []);
    // Paused: every watch hears nothing, not even a heartbeat, and ends within 10 s.
    process.kill(server.pid, "SIGSTOP");
    try {
      await waitFor(() => logged.some((l) => /mesh-wants/.test(l) && /ended|cannot/.test(l)), {
        what: "the stalled watch of mesh-wants noticed",
        timeout: 30_000,
      });
    } finally {
      process.kill(server.pid, "SIGCONT");
    }
    // Meanwhile echo is served on rack-00 and assigned there: the catalogue hears of it.
    const served = await serveEchoOnRacks(admin, 1);
    t.after(() => Promise.all(served.map((s) => s.stop())));
    const wants = await KvBucket.open(admin, Bucket.wants);
    await wants.put(nodeModuleKey("rack-00", "echo"), {
      build: "1-e3b0c442",
      manifestDigest: "0".repeat(64),
      fingerprint: "f",
      rule: "newest",
      reason: "the newest build",
    });
    const listed = await waitFor(() => catalogue?.find("echo__say"), {
      what: "echo__say listed after the stall",
      timeout: 60_000,
    });
    assert.deepEqual(listed.nodes, ["rack-00"]);
  } finally {
    await catalogue?.close();
    await admin.close();
    await server.stop();
  }
});
