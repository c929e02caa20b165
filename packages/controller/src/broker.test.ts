/** The broker on its own: passwords made and hashed once, kept across restarts, grants staged. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { hostGrant } from "@mesh/core";
import { verifyPassword, type ServerUser } from "@mesh/bus/server";
import { BROKER_USERS_FILE, Broker, hostPrincipal } from "./broker.js";
import { Vault } from "./vault.js";
import { withTempDir } from "@mesh/bus/testing";

const vault = Vault.withKey(randomBytes(32));

const withDir = (fn: (dir: string) => Promise<void>) => withTempDir("mesh-broker-", fn);

function recordingSink(): {
  lists: ServerUser[][];
  setUsers(users: readonly ServerUser[]): Promise<void>;
} {
  const lists: ServerUser[][] = [];
  return {
    lists,
    setUsers(users) {
      lists.push([...users]);
      return Promise.resolve();
    },
  };
}

describe("Broker", () => {
  it("hashes a password once, keeps it (0600) across a restart, and reloads only on a change", async () => {
    await withDir(async (dir) => {
      const sink = recordingSink();
      const statics: ServerUser[] = [];
      const options = {
        dir,
        vault,
        sink,
        staticUsers: () => Promise.resolve(statics),
        servers: ["nats://x:1"],
      };
      const broker = await Broker.open(options);
      assert.equal(await broker.ensure(hostPrincipal("n1")), true);
      assert.equal(await broker.ensure(hostPrincipal("n1")), false, "unchanged");
      assert.equal(broker.hashesMade, 1);
      assert.equal(await broker.commit(), true);
      assert.equal(await broker.commit(), false, "nothing staged: no reload");
      assert.equal(sink.lists.length, 1);
      assert.equal(((await stat(join(dir, BROKER_USERS_FILE))).mode & 0o777).toString(8), "600");

      const credential = broker.credential("n1.host");
      assert.ok(
        await verifyPassword(credential.password ?? "", sink.lists[0]?.[0]?.passwordHash ?? ""),
      );

      const again = await Broker.open(options);
      assert.equal(again.credential("n1.host").password, credential.password);
      assert.equal(await again.ensure(hostPrincipal("n1")), false);
      assert.equal(again.hashesMade, 0);
    });
  });

  it("puts the static users first and never lets an issued user shadow one", async () => {
    await withDir(async (dir) => {
      const sink = recordingSink();
      const statics: ServerUser[] = [
        {
          user: "n1.host",
          passwordHash: "$2b$10$" + "a".repeat(53),
          permissions: hostGrant({ node: "n1" }),
        },
      ];
      const broker = await Broker.open({
        dir,
        vault,
        sink,
        staticUsers: () => Promise.resolve(statics),
        servers: ["nats://x:1"],
      });
      await broker.ensure(hostPrincipal("n1"));
      await broker.ensure(hostPrincipal("n2"));
      await broker.commit();
      assert.deepEqual(
        sink.lists[0]?.map((u) => u.user),
        ["n1.host", "n2.host"],
      );
      assert.equal(sink.lists[0]?.[0], statics[0]);
    });
  });

  it("a failed reload stays staged, so the next commit applies it", async () => {
    await withDir(async (dir) => {
      let fail = true;
      const broker = await Broker.open({
        dir,
        vault,
        sink: {
          setUsers: () => (fail ? Promise.reject(new Error("bus down")) : Promise.resolve()),
        },
        staticUsers: () => Promise.resolve([]),
        servers: ["nats://x:1"],
      });
      await broker.ensure(hostPrincipal("n1"));
      await assert.rejects(broker.commit(), /bus down/);
      assert.equal(broker.pending, true);
      fail = false;
      assert.equal(await broker.commit(), true);
    });
  });
});
