import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { IssuedUsers, type IssuedUser } from "./broker-users-file.js";

const user = (name: string, node: string): IssuedUser => ({
  user: name,
  node,
  module: "host",
  kind: "host",
  permissions: { publish: { allow: [] }, subscribe: { allow: [] } },
});

describe("IssuedUsers", () => {
  it("keeps each node's users indexed through sets, moves, deletes and clears", () => {
    const users = new IssuedUsers();
    users.set("a.host", user("a.host", "a"));
    users.set("a.runtime", user("a.runtime", "a"));
    users.set("b.host", user("b.host", "b"));
    const names = (node: string) =>
      users
        .ofNode(node)
        .map((u) => u.user)
        .sort();
    assert.deepEqual(names("a"), ["a.host", "a.runtime"]);
    users.set("a.runtime", user("a.runtime", "b"));
    assert.deepEqual(names("a"), ["a.host"]);
    assert.deepEqual(names("b"), ["a.runtime", "b.host"]);
    assert.equal(users.delete("a.host"), true);
    assert.equal(users.delete("a.host"), false);
    assert.deepEqual(names("a"), []);
    users.clear();
    assert.deepEqual(names("b"), []);
    assert.equal(users.size, 0);
  });
});

describe("IssuedUsers' due index", () => {
  const due = (u: IssuedUser): number | undefined =>
    u.expiresAt === undefined ? undefined : Date.parse(u.expiresAt);
  const at = (name: string, ms: number | undefined): IssuedUser => ({
    ...user(name, "a"),
    ...(ms === undefined ? {} : { expiresAt: new Date(ms).toISOString() }),
  });

  it("says the first due and every one due by a time, through sets, renewals and deletes", () => {
    const users = new IssuedUsers(due);
    assert.equal(users.nextDue(), undefined);
    users.set("a", at("a", 3_000));
    users.set("b", at("b", 1_000));
    users.set("c", at("c", 2_000));
    users.set("never", at("never", undefined));
    assert.equal(users.nextDue(), 1_000);
    assert.deepEqual(
      users.dueBy(2_000).map((u) => u.user),
      ["b", "c"],
    );
    // Renewed: due later; its old time is no longer its own.
    users.set("b", at("b", 9_000));
    assert.equal(users.nextDue(), 2_000);
    assert.deepEqual(
      users.dueBy(5_000).map((u) => u.user),
      ["c", "a"],
    );
    users.delete("c");
    assert.equal(users.nextDue(), 3_000);
    users.set("a", at("a", undefined));
    assert.equal(users.nextDue(), 9_000);
    assert.deepEqual(
      users.dueBy(10_000).map((u) => u.user),
      ["b"],
    );
    users.clear();
    assert.equal(users.nextDue(), undefined);
  });

  it("agrees with a scan of every user after many renewals (stale entries dropped)", () => {
    const users = new IssuedUsers(due);
    let seed = 7;
    const random = (): number => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    for (let round = 0; round < 5_000; round++) {
      const name = `u${Math.floor(random() * 300)}`;
      if (random() < 0.1) users.delete(name);
      else users.set(name, at(name, Math.floor(random() * 100_000)));
      const times = [...users.values()].flatMap((u) => due(u) ?? []);
      assert.equal(users.nextDue(), times.length === 0 ? undefined : Math.min(...times));
      const by = Math.floor(random() * 100_000);
      const scanned = [...users.values()].filter((u) => (due(u) ?? Infinity) <= by);
      assert.deepEqual(
        users
          .dueBy(by)
          .map((u) => u.user)
          .sort(),
        scanned.map((u) => u.user).sort(),
      );
    }
  });
});
