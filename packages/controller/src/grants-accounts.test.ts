/**
 * The grants core derives hold the same in accounts mode as in users-list mode: every principal's
 * grant, issued as a users-list user on one real nats-server and as a signed user on another
 * (decision 0080), gets the same verdict for each subject its grant names (wildcards filled in)
 * and for subjects beyond it — and that verdict is core's `isAllowed` wherever the grant allows
 * something on that side.
 */
import { natsOf } from "@mesh/bus/internal";
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  hostGrant,
  isAllowed,
  mcpGrant,
  moduleGrant,
  partGrant,
  operatorGrant,
  runtimeGrant,
} from "@mesh/core";
import { MeshBus } from "@mesh/bus";
import {
  credentialFor,
  maySubscribe,
  startAccountsTestServer,
  startTestServer,
  type AccountsTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import type { Permissions } from "@mesh/protocol";
import { counter, hello, nodeTools, viewer } from "./test-support.js";

const owners = { counter: [{ name: "counts", readable: true }] };

const GRANTS: ReadonlyArray<[string, Permissions]> = [
  ["host", hostGrant({ node: "n1" })],
  ["operator", operatorGrant({ node: "n1" })],
  [
    "assigner",
    partGrant({
      node: "n1",
      principal: "assigner",
      parts: [
        {
          module: "mesh-assigner",
          reads: ["mesh/assignments", "mesh/artifacts", "mesh/conditions"],
          writes: ["mesh/wants", "mesh/build"],
        },
      ],
    }),
  ],
  ["mcp", mcpGrant({ node: "n1" })],
  ["viewer", moduleGrant({ node: "n1", manifest: viewer, owners }).permissions],
  ["counter", moduleGrant({ node: "n1", manifest: counter, owners }).permissions],
  ["node-tools", runtimeGrant({ node: "n1", modules: [hello, nodeTools], owners }).permissions],
];

/** The subjects a grant names, wildcards filled in, and some it does not. */
function probes(p: Permissions, side: "publish" | "subscribe"): string[] {
  const named = [...(p[side].allow ?? []), ...(p[side].deny ?? [])].filter((s) => !s.includes(" "));
  const filled = named.map((s) =>
    s
      .split(".")
      .map((t) => (t === "*" ? "x1" : t === ">" ? "y1.z1" : t))
      .join("."),
  );
  return [...new Set([...filled, "zz.beyond", "$JS.API.STREAM.CREATE.EVIL", "_INBOX.other.m.1"])];
}

/** Whether the server lets `bus` publish on `subject` (a violation comes before the PONG). */
async function mayPublish(bus: MeshBus, subject: string): Promise<boolean> {
  let denied = false;
  const watching = (async () => {
    for await (const s of natsOf(bus).nc.status()) {
      if (s.type === "error" && String(s.error).includes(`"${subject}"`)) denied = true;
    }
  })();
  natsOf(bus).nc.publish(subject);
  await natsOf(bus).nc.flush();
  await natsOf(bus).nc.flush();
  void watching;
  return !denied;
}

describe("core's grants in accounts mode and in users-list mode", () => {
  let users: TestServer;
  let accounts: AccountsTestServer;
  before(async () => {
    [users, accounts] = await Promise.all([startTestServer(), startAccountsTestServer()]);
    await users.setUsers(
      GRANTS.map(([name, permissions]) => ({ user: name, password: `${name}-pw`, permissions })),
    );
  });
  after(async () => {
    await Promise.all([users.stop(), accounts.stop()]);
  });

  for (const [name, permissions] of GRANTS) {
    it(`the ${name} grant gets the same verdicts from both servers`, async () => {
      const as = { node: "n1", module: name };
      const listed = await MeshBus.connect(
        credentialFor(users, { user: name, password: `${name}-pw` }, as),
      );
      const signed = await MeshBus.connect(
        credentialFor(accounts, await accounts.issue(name, permissions), as),
      );
      try {
        for (const side of ["publish", "subscribe"] as const) {
          const ask = side === "publish" ? mayPublish : maySubscribe;
          for (const subject of probes(permissions, side)) {
            const inList = await ask(listed, subject);
            const inAccount = await ask(signed, subject);
            assert.equal(inAccount, inList, `${name} ${side} ${subject}`);
            if ((permissions[side].allow ?? []).length > 0) {
              assert.equal(inAccount, isAllowed(permissions, side, subject), `${side} ${subject}`);
            }
          }
        }
      } finally {
        await Promise.all([listed.close(), signed.close()]);
      }
    });
  }
});
