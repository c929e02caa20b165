/**
 * The bad-manifest corpus of @mesh/core fed to the controller's manifest intake: each is refused
 * with the rule and path core expects, none throws; and the same corpus written to a real
 * mesh-manifests and wanted by a node never stops the controller composing the others.
 */
import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import { Bucket, nodeModuleKey } from "@mesh/protocol";
import { manifestFormatOf, type ManifestProblem } from "@mesh/core";
import { deadline } from "@mesh/bus/testing";
import { intakeManifest, intakeManifestText } from "./manifest-intake.js";
import { d, hello, newKeys, nodeTools, presenceOf, startMesh, type Mesh } from "./test-support.js";

const corpus = fileURLToPath(new URL("../../core/test-fixtures/bad-manifests/", import.meta.url));

async function readCorpus(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(corpus)).filter((n) => n !== "expected.json").sort();
  return Promise.all(
    names.map(async (name) => ({ name, text: await readFile(corpus + name, "utf8") })),
  );
}

const formatOf = (name: string) => manifestFormatOf(name.replace(/\.txt$/, "")) ?? "yaml";

describe("the controller's manifest intake", () => {
  it("refuses every manifest of the corpus with core's rule and path, and never throws", async () => {
    const expected = JSON.parse(await readFile(`${corpus}expected.json`, "utf8")) as Record<
      string,
      { code: string; path: string }[]
    >;
    const files = await readCorpus();
    assert.ok(files.length >= 30, `the corpus has ${files.length} manifests`);
    for (const { name, text } of files) {
      const result = intakeManifestText(text, formatOf(name));
      assert.equal(result.ok, false, name);
      if (result.ok) continue;
      const got = (result.problems as ManifestProblem[]).map((p) => `${p.code}@${p.path}`).sort();
      const want = (expected[name] ?? []).map((p) => `${p.code}@${p.path}`).sort();
      assert.deepEqual(got, want, name);
    }
  });

  it("refuses values that are not manifests at all, without throwing", () => {
    for (const value of [
      null,
      42,
      "mesh.yaml",
      [],
      { module: {} },
      Object.create(null) as object,
    ]) {
      assert.equal(intakeManifest(value).ok, false);
    }
  });
});

describe("the corpus on a real mesh-manifests", () => {
  let mesh: Mesh;
  before(async () => {
    mesh = await startMesh();
    await mesh.startController();
  });
  after(() => mesh[Symbol.asyncDispose]());

  it("keeps the controller running and composing other nodes", async () => {
    const keys = newKeys();
    await mesh.put(Bucket.presence, "bad", presenceOf("bad", keys));
    const files = await readCorpus();
    for (const [i, { name, text }] of files.entries()) {
      let value: unknown;
      try {
        value = formatOf(name) === "json" ? JSON.parse(text) : parseYaml(text);
        JSON.stringify(value); // a YAML alias cycle has no JSON form
      } catch {
        value = text; // what cannot be parsed is stored as the text itself
      }
      const digest = d(i.toString(16).padStart(2, "0"));
      await mesh.put(Bucket.manifests, digest, value ?? null);
      await mesh.put(Bucket.wants, nodeModuleKey("bad", `m${i}`), {
        build: "1-bad",
        manifestDigest: digest,
        fingerprint: "f",
        rule: "newest",
        reason: "the corpus",
      });
    }
    const refused = new Promise<void>((resolve) => {
      const off = mesh.controller.onPass((report) => {
        if (report.refused.includes("bad")) {
          off();
          resolve();
        }
      });
    });
    await deadline(refused, 20_000, "the node wanting the corpus refused");

    await mesh.put(Bucket.presence, "good", presenceOf("good", newKeys()));
    await mesh.want("good", hello);
    await mesh.want("good", nodeTools);
    const good = await mesh.composed(
      "good",
      (c) => c.resources.some((r) => r.id === "hello.bundle-tools"),
      "another node composed after the corpus, with its runtime and hello's tools",
    );
    assert.equal(good.value.node, "good");
    assert.equal(mesh.controller.state, "running");
  });
});
