import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Composed, ObjectStore, type Manifest } from "@mesh/protocol";
import { compose } from "./composition.js";
import { formatProblem } from "./manifest-problem.js";
import { parseManifestText } from "./manifest-text.js";
import { fixture, matchesGolden } from "./test-support.js";

interface Scenario {
  readonly about: string;
  readonly modules: readonly string[];
  readonly adopted?: boolean;
  readonly account?: string;
  readonly accountHome?: string;
  readonly root?: string;
}

const scenarios = JSON.parse(readFileSync(fixture("golden", "scenarios.json"), "utf8")) as Record<
  string,
  Scenario
>;

function module(name: string): Manifest {
  const checked = parseManifestText(
    readFileSync(fixture("golden", "modules", `${name}.yaml`), "utf8"),
    "yaml",
  );
  if (!checked.ok) assert.fail(checked.problems.map(formatProblem).join("\n"));
  return checked.manifest;
}

// Each golden file is what the controller would write to mesh-composed for that node; they are
// read by a person when they change (UPDATE_GOLDEN=1 writes them).
describe("composition goldens", () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    it(`${name}: ${scenario.about}`, async () => {
      const composition = compose({
        node: "edge-01",
        modules: scenario.modules.map(module),
        adopted: scenario.adopted,
        account: scenario.account,
        accountHome: scenario.accountHome,
        root: scenario.root,
        artifacts: { store: ObjectStore.artifacts },
      });
      assert.ok(
        composition.ok,
        composition.ok ? "" : JSON.stringify(composition.refusals, null, 2),
      );
      Composed.parse({
        node: composition.node,
        resources: composition.resources,
        fingerprint: composition.fingerprint,
      });
      await matchesGolden(fixture("golden", `${name}.json`), composition);
    });
  }
});
