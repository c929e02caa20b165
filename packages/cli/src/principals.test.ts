/**
 * mesh up's own principals in accounts mode, against a real nats-server trusting the mesh's
 * operator: a credential whose permissions are the code's is kept; one whose permissions moved
 * gets a new key, and the old key is revoked whole (decision 0091).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MeshBus } from "@mesh/bus";
import { publicKeyOf } from "@mesh/bus/server";
import { accountsSuite } from "@mesh/bus/testing";
import { isMeshError, type Permissions } from "@mesh/protocol";
import { ensureSignedPrincipals } from "./principals.js";
import { rootPaths } from "./mesh-root.js";

const grant = (publish: string): Permissions => ({
  publish: { allow: [publish] },
  subscribe: { allow: ["_INBOX.>"] },
});

describe("mesh up's signed principals", () => {
  const suite = accountsSuite("mesh-principals-", { before, after });

  const ensure = (publish: string) =>
    ensureSignedPrincipals(rootPaths(suite.dir), {
      node: "n1",
      servers: [suite.server.url],
      principals: [{ principal: "operator", permissions: grant(publish) }],
      keys: suite.server.keys,
    });

  it("keeps a current credential; one whose permissions moved gets a new key, the old one revoked whole", async () => {
    const first = (await ensure("svc.a.>")).credentials.get("operator")?.credential;
    assert.ok(first?.seed !== undefined);
    const kept = await ensure("svc.a.>");
    assert.deepEqual(kept.credentials.get("operator")?.credential, first, "kept as it was");
    assert.deepEqual(kept.revocations, {});

    const moved = await ensure("svc.b.>");
    const next = moved.credentials.get("operator")?.credential;
    assert.ok(next?.seed !== undefined);
    assert.notEqual(publicKeyOf(next.seed), publicKeyOf(first.seed), "a new key");
    assert.deepEqual(Object.keys(moved.revocations), [publicKeyOf(first.seed)]);

    // The bus starts with these revocations: the old key is refused, the new one logs in.
    await suite.server.authority.revoke(moved.revocations);
    await assert.rejects(
      MeshBus.connect(first),
      (e: unknown) => isMeshError(e) && /Authorization/i.test(e.message),
    );
    await (await MeshBus.connect(next)).close();
  });
});
