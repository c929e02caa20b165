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
