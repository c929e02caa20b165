/** MESH_VERSION is the one place the version is written: every package says the same. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { MESH_VERSION } from "./version.js";

/** This file runs from packages/protocol/dist/; the packages folder is two folders up. */
const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));

test("every package's package.json carries MESH_VERSION", () => {
  const names = readdirSync(PACKAGES);
  assert.ok(names.length >= 10, `expected the packages in ${PACKAGES}, found ${names.join(", ")}`);
  for (const name of names) {
    const manifest = JSON.parse(readFileSync(`${PACKAGES}${name}/package.json`, "utf8")) as {
      version?: string;
    };
    assert.equal(manifest.version, MESH_VERSION, `packages/${name}/package.json`);
  }
});
