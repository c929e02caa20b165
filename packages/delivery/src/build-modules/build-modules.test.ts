/**
 * Build modules on a real bus (decision 0160): the builder hands each language's bundles to its
 * build module over `mesh.build.<language>`; TypeScript's gives the archives the builder made
 * itself before build modules existed; a language no build module builds is refused naming those
 * the mesh has; a build module that is not running (TypeScript, Python, Go) makes its language's builds wait, with a
 * condition naming it, and they build once it is back; one whose builder throws fails the build.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ArtifactStore, KvBucket, readStream, request, type MeshBus } from "@mesh/bus";
import { waitFor } from "@mesh/bus/testing";
import {
  Bucket,
  BuildAnswer,
  Condition,
  buildAskSubject,
  Stream,
  conditionSubject,
  isMeshError,
  type Build,
} from "@mesh/protocol";
import { Builder } from "../builder.js";
import { buildSource } from "../build-source.js";
import { Indexer } from "../indexer.js";
import { registerModule } from "../register.js";
import {
  folderWith,
  processManifest,
  startDeliveryBus,
  type DeliveryBus,
} from "../test-support.js";
import { BuildModule } from "./build-module.js";
import { typescriptBuilder } from "./typescript.js";
import { pythonBuilder } from "./python.js";
import { goBuilder } from "./go.js";
import type { LanguageBuilder } from "./language-builder.js";
import { waitingCondition } from "../build-waits.js";
import { packArchive } from "../pack.js";

/**
 * A module with a tools bundle and a daemon bundle, and the digests the builder gave it in-process
 * before build modules existed (main at 3af0903, `buildSource`): the same source must give the
 * same archives and resolved manifest through mesh-build-typescript.
 */
const GOLDEN = {
  files: {
    "mesh.yaml":
      "module: golden\nbundles:\n  - name: tools\n    language: typescript\n    entrypoints: [src/tools.ts]\n    loads: [src/tools.ts]\n  - name: daemon\n    language: typescript\n    entrypoints: [src/main.ts]\nprocesses:\n  - name: main\n    bundle: daemon\n",
    "src/tools.ts": 'import { greet } from "./greet.js";\nexport const tools = { greet };\n',
    "src/greet.ts": "export const greet = (name: string): string => `Hello, ${name}`;\n",
    "src/main.ts": 'import { greet } from "./greet.js";\nconsole.log(greet("daemon"));\n',
  },
  tools: "7240b2a111bbb3fcfbf1713fcba4d500b2be8dfc8bc069466425554fcb49ca85",
  daemon: "e5b64163b4dbdeae032ecb24450520341b6a9cb35b9744446c09f4f7c81c86cf",
};

let bus: DeliveryBus;
const stop = new AbortController();
const buildConnections: MeshBus[] = [];

/** Starts a language's build module on a connection of its own; its stop ends only it. */
async function startBuildModule(
  builder: LanguageBuilder = typescriptBuilder,
): Promise<{ stop: AbortController; done: Promise<void> }> {
  const connection = await bus.connectBuild();
  buildConnections.push(connection);
  const module = await BuildModule.create({ bus: connection, builder });
  const own = new AbortController();
  stop.signal.addEventListener("abort", () => own.abort());
  const done = module.run({ signal: own.signal });
  return { stop: own, done };
}

before(async () => {
  bus = await startDeliveryBus();
  const indexer = await Indexer.create({ bus: bus.delivery, debounceMs: 100 });
  const builder = await Builder.create({ bus: bus.delivery });
  void indexer.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
  void builder.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
});

after(async () => {
  stop.abort();
  for (const c of buildConnections) await c.close().catch(() => undefined);
  await bus?.[Symbol.asyncDispose]();
});

async function buildOf(
  module: string,
  test: (b: Build) => boolean,
  what: string,
  timeout = 60_000,
): Promise<Build> {
  const builds = await KvBucket.open(bus.admin, Bucket.builds);
  return waitFor(
    async () => {
      for (const key of await builds.keys(`${module}.*`)) {
        const value = (await builds.get(key))?.value;
        if (value !== undefined && test(value)) return value;
      }
      return undefined;
    },
    { what, timeout },
  );
}

/** The last `waiting-<language>` condition the builder said, or undefined. */
async function waitingSaid(language: string): Promise<Condition | undefined> {
  const subject = conditionSubject("delivery", waitingCondition(language));
  let last: Condition | undefined;
  for await (const event of readStream(bus.admin, Stream.conditions, {
    filter: subject,
    schema: Condition,
  })) {
    if (event.type === "current") break;
    if (event.type === "message") last = event.value;
  }
  return last;
}

describe("build modules", () => {
  it("a build module that is not running makes its language's builds wait with a condition naming it; they build once it is back", async () => {
    // No build module has started yet: typescript is a language the mesh ships, so it waits.
    const dir = await folderWith(GOLDEN.files, "golden");
    await registerModule(bus.operator, dir, { by: "ada" });
    const waiting = await buildOf(
      "golden",
      (b) => b.status === "building" && b.log.startsWith("waiting:"),
      "golden's build waiting for mesh-build-typescript",
    );
    assert.match(waiting.log, /mesh-build-typescript does not answer/);
    const said = await waitFor(
      async () => {
        const c = await waitingSaid("typescript");
        return c?.resolved !== true && c;
      },
      { what: "the waiting condition said" },
    );
    assert.equal(said.level, "warning");
    assert.match(said.message, /mesh-build-typescript/);
    assert.match(said.message, /mesh build-module typescript/);

    const first = await startBuildModule();
    const built = await buildOf("golden", (b) => b.status === "built", "golden built once back");
    await waitFor(async () => (await waitingSaid("typescript"))?.resolved === true, {
      what: "the waiting condition resolved",
    });

    // Through the build module: the archives and digests the builder made before build modules.
    const digests = Object.fromEntries(built.bundles.map((b) => [b.name, b.digest]));
    assert.deepEqual(digests, { tools: GOLDEN.tools, daemon: GOLDEN.daemon });
    const local = await buildSource(dir);
    assert.ok(local.ok, local.ok ? "" : local.log);
    assert.equal(built.manifestDigest, local.manifestDigest);

    // Stopped again: the next build waits again, and is built when a build module comes back.
    first.stop.abort();
    await first.done;
    const again = await folderWith(
      { ...GOLDEN.files, "mesh.yaml": GOLDEN.files["mesh.yaml"].replace("golden", "again") },
      "again",
    );
    await registerModule(bus.operator, again, { by: "ada" });
    await buildOf(
      "again",
      (b) => b.status === "building" && b.log.startsWith("waiting:"),
      "again waiting",
    );
    await waitFor(async () => (await waitingSaid("typescript"))?.resolved !== true, {
      what: "the condition said again",
    });
    await startBuildModule();
    const second = await buildOf("again", (b) => b.status === "built", "again built");
    assert.equal(second.bundles.find((b) => b.name === "tools")?.digest, GOLDEN.tools);
  });

  // Python and Go as TypeScript: the wait is the builder's, whatever the language (a go build
  // from a cold cache compiles the standard library again for -trimpath: minutes on CI).
  const others = [
    {
      builder: pythonBuilder,
      files: { "main.py": 'print("hello from python")\n' },
      entry: "main.py",
    },
    {
      builder: goBuilder,
      files: {
        "go.mod": "module waits\n\ngo 1.19\n",
        "main.go": "package main\n\nfunc main() {}\n",
      },
      entry: "main.go",
    },
  ];
  for (const { builder, files, entry } of others) {
    const language = builder.language;
    it(`a ${language} build waits, with a condition naming mesh-build-${language}, while no ${language} build module runs, and builds once it starts`, async () => {
      const module = `waits-${language}`;
      const manifest = processManifest(module, language, entry);
      const dir = await folderWith({ "mesh.yaml": manifest, ...files }, module);
      await registerModule(bus.operator, dir, { by: "ada" });
      const waiting = await buildOf(
        module,
        (b) => b.status === "building" && b.log.startsWith("waiting:"),
        `${module}'s build waiting for mesh-build-${language}`,
      );
      assert.match(waiting.log, new RegExp(`mesh-build-${language} does not answer`));
      const said = await waitFor(
        async () => {
          const c = await waitingSaid(language);
          return c?.resolved !== true && c;
        },
        { what: `the waiting-${language} condition said` },
      );
      assert.equal(said.level, "warning");
      assert.match(said.message, new RegExp(`mesh-build-${language}`));
      assert.match(said.message, new RegExp(`mesh build-module ${language}`));

      await startBuildModule(builder);
      const built = await buildOf(
        module,
        (b) => b.status === "built",
        `${module} built once mesh-build-${language} runs`,
        300_000,
      );
      assert.deepEqual(
        built.bundles.map((b) => b.name),
        ["app"],
      );
      await waitFor(async () => (await waitingSaid(language))?.resolved === true, {
        what: `the waiting-${language} condition resolved`,
      });
    });
  }

  it("a language is added by running its build module: the mesh builds it and names it, with no change to the builder", async () => {
    // A build module of a language the mesh does not ship: its bundle is its entrypoints as
    // they are, run by sh.
    const shell: LanguageBuilder = {
      language: "shell",
      toolchain: "sh",
      build: async ({ root, bundles }) => ({
        ok: true,
        bundles: await Promise.all(
          bundles.map(async (b) => ({
            bundle: b.name,
            files: await Promise.all(
              b.entrypoints.map(async (path) => ({
                path,
                bytes: await readFile(join(root, path)),
              })),
            ),
            run: ["sh", ...b.entrypoints.slice(0, 1)],
          })),
        ),
      }),
    };
    const files = (module: string, language: string) => ({
      "mesh.yaml": processManifest(module, language, "main.sh"),
      "main.sh": "echo hello from sh\n",
    });
    // Before it runs, shell is refused like any language the mesh has no build module for.
    const early = await folderWith(files("shelly", "shell"), "shelly-early");
    await assert.rejects(registerModule(bus.operator, early, { by: "ada" }), /mesh-build-shell/);

    const registry = await KvBucket.open(bus.admin, Bucket.buildModules);
    await startBuildModule(shell);
    await waitFor(async () => (await registry.get("shell"))?.value.module === "mesh-build-shell", {
      what: "mesh-build-shell registered",
    });
    const dir = await folderWith(files("shelly", "shell"), "shelly");
    await registerModule(bus.operator, dir, { by: "ada" });
    const built = await buildOf("shelly", (b) => b.status === "built", "shelly built");
    assert.deepEqual(
      built.bundles.map((b) => b.name),
      ["app"],
    );
    // A language nobody builds is now refused naming shell among the languages the mesh has.
    const rusty = await folderWith(files("rusty-sh", "rust"), "rusty-sh");
    await assert.rejects(registerModule(bus.operator, rusty, { by: "ada" }), (error: unknown) => {
      assert.ok(isMeshError(error));
      assert.match(error.message, /this mesh has build modules for go, python, shell, typescript/);
      return true;
    });
  });

  it("a build module whose builder throws (its SDK missing, a file it cannot read) fails the build with the error, instead of leaving it building", async () => {
    const broken: LanguageBuilder = {
      language: "brokenlang",
      toolchain: "none",
      build: () =>
        Promise.reject(new Error("ENOENT: no such file or directory, scandir '/gone/python'")),
    };
    const registry = await KvBucket.open(bus.admin, Bucket.buildModules);
    await startBuildModule(broken);
    await waitFor(async () => (await registry.get("brokenlang")) !== undefined, {
      what: "mesh-build-brokenlang registered",
    });
    const dir = await folderWith(
      {
        "mesh.yaml": processManifest("cracked", "brokenlang", "main.x"),
        "main.x": "x\n",
      },
      "cracked",
    );
    await registerModule(bus.operator, dir, { by: "ada" });
    const failed = await buildOf("cracked", (b) => b.status === "failed", "cracked failed");
    assert.match(failed.error ?? "", /mesh-build-brokenlang failed: ENOENT.*\/gone\/python/);
  });

  it("a build that outlasts the builder's ask is built once: the ask made again, during it or after, is answered by it", async () => {
    let builds = 0;
    let finish = (): void => undefined;
    const slow: LanguageBuilder = {
      language: "slowlang",
      toolchain: "none",
      build: async ({ root, bundles }) => {
        builds += 1;
        await new Promise<void>((resolve) => (finish = resolve));
        return {
          ok: true,
          bundles: await Promise.all(
            bundles.map(async (b) => ({
              bundle: b.name,
              files: [{ path: "main.x", bytes: await readFile(join(root, "main.x")) }],
            })),
          ),
        };
      },
    };
    await startBuildModule(slow);
    const source = await (
      await ArtifactStore.open(bus.delivery)
    ).put(
      packArchive([
        {
          path: "mesh.yaml",
          bytes: Buffer.from(processManifest("sloth", "slowlang", "main.x")),
        },
        { path: "main.x", bytes: Buffer.from("x\n") },
      ]),
    );
    const ask = (build: string, timeoutMs: number) =>
      request(
        bus.delivery,
        buildAskSubject("slowlang"),
        { module: "sloth", build, language: "slowlang", source: source.digest, bundles: ["app"] },
        { timeoutMs },
      );
    // The builder's ask goes unanswered (here after 1 s) while the build runs, and it asks again.
    await waitFor(
      async () => (await ask("b1", 1_000).catch(() => undefined)) === undefined && builds === 1,
      {
        what: "the first ask unanswered while its build runs",
      },
    );
    const again = ask("b1", 60_000);
    finish();
    const answer = BuildAnswer.parse(await again);
    assert.ok(answer.ok, answer.ok ? "" : answer.error);
    assert.equal(builds, 1, "the ask made again built the source again");
    // And once answered, the same build asked again is answered at once, built no more.
    assert.deepEqual(BuildAnswer.parse(await ask("b2", 60_000)), answer);
    assert.equal(builds, 1);
  });

  it("a language no build module builds is refused at registration and by the builder, naming the languages the mesh has", async () => {
    const rust = {
      "mesh.yaml":
        "module: rusty\nbundles:\n  - name: app\n    language: rust\n    entrypoints: [src/main.rs]\nprocesses:\n  - name: app\n    bundle: app\n",
      "src/main.rs": "fn main() {}\n",
    };
    const dir = await folderWith(rust, "rusty");
    await assert.rejects(registerModule(bus.operator, dir, { by: "ada" }), (error: unknown) => {
      assert.ok(isMeshError(error));
      assert.equal(error.code, "MANIFEST_INVALID");
      assert.match(error.message, /"rust"/);
      assert.match(error.message, /this mesh has build modules for .*typescript/);
      assert.match(error.message, /mesh-build-rust/);
      return true;
    });
    // Registered behind the check's back (as an older CLI would): the builder fails it for good.
    const modules = await KvBucket.open(bus.operator, Bucket.modules);
    await modules.put("rusty", {
      module: "rusty",
      source: { kind: "directory", path: dir },
      by: "ada",
      at: new Date().toISOString(),
    });
    const failed = await buildOf("rusty", (b) => b.status === "failed", "rusty failed");
    assert.match(failed.error ?? "", /written in "rust".*this mesh has build modules for/);
  });
});
