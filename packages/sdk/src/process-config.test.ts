/** secretPath: a declared secret's file from the environment the host gives a process. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isMeshError } from "@mesh/protocol";
import { secretPath } from "./process-config.js";

describe("secretPath", () => {
  const env = {
    MESH_SECRETS_DIR: "/var/lib/mesh/secrets/notes",
    MESH_SECRET_FILES: JSON.stringify({
      "api-token": "/var/lib/mesh/secrets/notes/api-token",
      broker: "/etc/notes/broker.json",
    }),
  };

  test("names the file the host wrote for a declared secret", () => {
    assert.equal(secretPath("api-token", env), "/var/lib/mesh/secrets/notes/api-token");
    assert.equal(secretPath("broker", env), "/etc/notes/broker.json");
  });

  test("an undeclared secret is NOT_FOUND, naming the declared ones", () => {
    assert.throws(
      () => secretPath("password", env),
      (e: unknown) =>
        isMeshError(e) && e.code === "NOT_FOUND" && /declares api-token, broker/.test(e.message),
    );
  });

  test("outside a mesh host it says so", () => {
    assert.throws(
      () => secretPath("api-token", {}),
      (e: unknown) => isMeshError(e) && /MESH_SECRET_FILES is not set/.test(e.message),
    );
  });
});
