/** What a composition requires of its host (decision 0202), and versions in order. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { HOST_FEATURES, compareVersions, missingFeatures, requiresOf } from "./host-features.js";

test("requiresOf: the features sorted and once, with the newest version among them; none is undefined", () => {
  assert.equal(requiresOf([]), undefined);
  assert.deepEqual(requiresOf(["host-build", "host-build"]), {
    features: ["host-build"],
    version: HOST_FEATURES["host-build"],
  });
});

test("missingFeatures: what a host's table lacks", () => {
  assert.deepEqual(missingFeatures(undefined), []);
  assert.deepEqual(missingFeatures({ features: ["host-build"] }), []);
  assert.deepEqual(missingFeatures({ features: ["zeta", "host-build", "alpha"] }), [
    "alpha",
    "zeta",
  ]);
  assert.deepEqual(missingFeatures({ features: ["host-build"] }, {}), ["host-build"]);
});

test("compareVersions orders by numbers, a release after its pre-releases", () => {
  const ordered = ["0.1.0", "0.1.1", "0.2.0-rc.1", "0.2.0", "0.9.9", "0.10.0", "1.0.0"];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      const [a, b] = [ordered[i] as string, ordered[j] as string];
      assert.equal(Math.sign(compareVersions(a, b)), Math.sign(i - j), `${a} vs ${b}`);
    }
  }
});
