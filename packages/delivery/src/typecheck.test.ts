/** Type-checked builds: a type error fails the build with the compiler's words; config agrees. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildSource } from "./build-source.js";
import { folderWith } from "./test-support.js";

const moduleWith = (files: Record<string, string>): Promise<string> =>
  folderWith(files, "typecheck");

const manifest = (config = "") =>
  [
    "module: notes",
    "bundles:",
    "  - name: tools",
    "    language: typescript",
    "    entrypoints: [src/tools.ts]",
    "    loads: [src/tools.ts]",
    config,
    "",
  ].join("\n");

const TOOLS = (schema: string) => `import { defineModule, defineTool, z } from "@mesh/sdk";
const config = z.object(${schema});
export default defineModule({
  config,
  tools: [
    defineTool({
      name: "limit",
      description: "Says the limit.",
      input: z.object({}),
      config,
      handler: async (_input, ctx) => ({ max: await ctx.config.get("max") }),
    }),
  ],
});
`;

describe("type-checked builds", () => {
  it("a type error fails the build with the compiler's message, file and line", async () => {
    const dir = await moduleWith({
      "mesh.yaml": manifest(),
      "src/tools.ts": 'import { n } from "./n.js";\nexport const doubled: string = n * 2;\n',
      "src/n.ts": "export const n = 21;\n",
    });
    const result = await buildSource(dir);
    assert.equal(result.ok, false);
    assert.ok(!result.ok);
    assert.match(result.error, /type check \(the strict default\) found errors/);
    assert.match(
      result.log,
      /src\/tools\.ts\(2,14\): error TS2322: Type 'number' is not assignable to type 'string'\./,
    );
  });

  it("a module outside the repository importing @mesh/sdk checks against the mesh's SDK", async () => {
    const dir = await moduleWith({
      "mesh.yaml": manifest("config:\n  max:\n    type: integer\n    minimum: 1\n    default: 3"),
      "src/tools.ts": TOOLS("{ max: z.number().int() }"),
    });
    const result = await buildSource(dir);
    assert.ok(result.ok, result.ok ? "" : result.log);
    assert.match(result.log, /type check \(the strict default\): 2 file\(s\), no errors/);
  });

  it("the module's own tsconfig.json is used, and a broken one is reported", async () => {
    const loose = {
      compilerOptions: { strict: false, module: "esnext", moduleResolution: "bundler" },
    };
    const sloppy = "export function add(a, b) { return a + b; }\n";
    const strict = await moduleWith({ "mesh.yaml": manifest(), "src/tools.ts": sloppy });
    const refused = await buildSource(strict);
    assert.ok(!refused.ok);
    assert.match(refused.log, /TS7006: Parameter 'a' implicitly has an 'any' type/);
    const own = await moduleWith({
      "mesh.yaml": manifest(),
      "src/tools.ts": sloppy,
      "tsconfig.json": JSON.stringify(loose),
    });
    const built = await buildSource(own);
    assert.ok(built.ok, built.ok ? "" : built.log);
    assert.match(built.log, /type check \(tsconfig\.json\)/);
    const broken = await moduleWith({
      "mesh.yaml": manifest(),
      "src/tools.ts": sloppy,
      "tsconfig.json": '{ "compilerOptions": { "target": "es1900" } }',
    });
    const failed = await buildSource(broken);
    assert.ok(!failed.ok);
    assert.match(failed.log, /target/);
  });

  it("a config schema that disagrees with the manifest fails the build, naming the key", async () => {
    const wrongType = await moduleWith({
      "mesh.yaml": manifest("config:\n  max:\n    type: string\n    default: x"),
      "src/tools.ts": TOOLS("{ max: z.number() }"),
    });
    const a = await buildSource(wrongType);
    assert.ok(!a.ok);
    assert.match(a.error, /config schema given to defineModule does not agree with the manifest/);
    assert.match(a.log, /max/);
    const missing = await moduleWith({
      "mesh.yaml": manifest("config:\n  other:\n    default: 1"),
      "src/tools.ts": TOOLS("{ max: z.number() }"),
    });
    const b = await buildSource(missing);
    assert.ok(!b.ok);
    assert.match(b.log, /does not agree[^\n]*'max'/);
    const enums = await moduleWith({
      "mesh.yaml": manifest('config:\n  max:\n    enum: ["a", "b"]\n    default: a'),
      "src/tools.ts": TOOLS('{ max: z.enum(["a", "b"]) }'),
    });
    const c = await buildSource(enums);
    assert.ok(c.ok, c.ok ? "" : c.log);
  });
});
