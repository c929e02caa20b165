/**
 * A module written outside the repository: it installs the SDK's tarball, gets its types (a
 * wrong use does not type-check), and the installed mesh builds it; the installed mesh builds the
 * Python and Go examples too (mesh_sdk and the Go SDK travel in its package).
 */
import assert from "node:assert/strict";
import { cp, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startMeshUp, type MeshUp } from "../testing/mesh-up.js";
import { REPO, ok, packAndInstall, run, type Packed } from "../testing/packed.js";

const TSC = join(REPO, "node_modules", "typescript", "bin", "tsc");

let packed: Packed;
let up: MeshUp | undefined;

before(async () => {
  packed = await packAndInstall();
});

after(async () => {
  await up?.stop();
  await packed?.[Symbol.asyncDispose]();
});

const MANIFEST = `module: greeter
bundles:
  - name: tools
    language: typescript
    entrypoints: [src/tools.ts]
    loads: [src/tools.ts]
`;

const TOOLS = `import { defineModule, defineTool, z } from "@mesh/sdk";
const hi = defineTool({
  name: "hi",
  description: "Says hi.",
  input: z.object({ name: z.string() }),
  output: z.object({ text: z.string() }),
  handler: ({ name }) => Promise.resolve({ text: \`hi \${name}\` }),
});
export default defineModule({ tools: [hi] });
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    noEmit: true,
  },
  include: ["src"],
};

describe("a module outside the repository, with the packed SDK", () => {
  test("gets the SDK's types from its tarball and is built by the installed mesh", async () => {
    const module = join(packed.scratch, "greeter");
    await mkdir(join(module, "src"), { recursive: true });
    await writeFile(
      join(module, "package.json"),
      JSON.stringify({ name: "greeter", private: true, type: "module" }),
    );
    await writeFile(join(module, "mesh.yaml"), MANIFEST);
    await writeFile(join(module, "src", "tools.ts"), TOOLS);
    await writeFile(join(module, "tsconfig.json"), JSON.stringify(TSCONFIG));
    ok(
      await run(
        "npm",
        ["install", "--prefer-offline", "--no-audit", "--no-fund", packed.tarballs.sdk],
        {
          cwd: module,
        },
      ),
      "npm install the SDK's tarball",
    );
    ok(await run(process.execPath, [TSC, "-p", module], { cwd: module }), "tsc on the module");
    // A wrong use is a type error: the types really come from the tarball.
    const wrong = join(module, "src", "wrong.ts");
    await writeFile(wrong, 'import { defineTool } from "@mesh/sdk";\ndefineTool({ name: 1 });\n');
    const refused = await run(process.execPath, [TSC, "-p", module], { cwd: module });
    assert.notEqual(refused.code, 0, "a wrong use of the SDK does not type-check");
    await rm(wrong);

    up = await startMeshUp({
      root: join(packed.scratch, "root"),
      node: "packed-two",
      command: [packed.mesh],
      cwd: packed.scratch,
      env: packed.env,
    });
    const added = ok(
      await run(packed.mesh, ["module", "add", module, "--wait", "--json", "--root", up.root], {
        env: packed.env,
        ms: 600_000,
      }),
      "mesh module add --wait",
    );
    assert.match(added.stdout, /"built"/);
  });

  test("the installed mesh builds Python and Go modules: both languages' SDKs are in its package", async () => {
    assert.ok(up, "the mesh the test before started");
    for (const example of ["hello-python", "hello-go"]) {
      const module = join(packed.scratch, example);
      await cp(join(REPO, "examples", "modules", example), module, { recursive: true });
      const added = ok(
        await run(packed.mesh, ["module", "add", module, "--wait", "--json", "--root", up.root], {
          env: packed.env,
          ms: 600_000,
        }),
        `mesh module add ${example} --wait`,
      );
      assert.match(added.stdout, /"built"/);
    }
  });
});
