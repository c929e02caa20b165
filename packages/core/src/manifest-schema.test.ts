import { describe, it } from "node:test";
import { manifestJsonSchema } from "@mesh/protocol";
import { matchesGolden, repoFile } from "./test-support.js";

describe("the manifest's JSON Schema", () => {
  // Editors point at docs/manifest.schema.json; it is generated from the schema the mesh checks
  // with, and this keeps the committed file equal to it (UPDATE_GOLDEN=1 rewrites it).
  it("is committed as generated", async () => {
    await matchesGolden(repoFile("docs", "manifest.schema.json"), manifestJsonSchema());
  });
});
