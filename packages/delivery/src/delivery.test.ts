import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ArtifactStore, KvBucket, type MeshBus } from "@mesh/bus";
import { firstPut } from "@mesh/bus/testing";
import { Bucket, isMeshError, type Build, type Candidate } from "@mesh/protocol";
import { Builder } from "./builder.js";
import { BuildModule } from "./build-modules/build-module.js";
import { typescriptBuilder } from "./build-modules/typescript.js";
import { Indexer, revisionOf } from "./indexer.js";
import { registerModule } from "./register.js";
import { folderWith, startDeliveryBus, toolsManifest, type DeliveryBus } from "./test-support.js";

let bus: DeliveryBus;
let buildBus: MeshBus | undefined;
const stop = new AbortController();

before(async () => {
  bus = await startDeliveryBus();
  const indexer = await Indexer.create({ bus: bus.delivery, debounceMs: 100 });
  const builder = await Builder.create({ bus: bus.delivery });
  buildBus = await bus.connectBuild();
  const typescript = await BuildModule.create({
    bus: buildBus,
    builder: typescriptBuilder,
  });
  void typescript.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
  void indexer.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
  void builder.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
});

after(async () => {
  stop.abort();
  await buildBus?.close();
  await bus?.[Symbol.asyncDispose]();
});

const folder = (files: Record<string, string>): Promise<string> =>
  folderWith(files, "delivery-src");

/** The first value under `key` (a pattern) that satisfies `test`, from what stands or what comes. */
async function waitFor<T>(
  bucket: KvBucket<T>,
  key: string,
  test: (v: T) => boolean,
  what: string,
): Promise<T> {
  return (await firstPut(bucket, key, { until: test, what })).value;
}

describe("registration, indexer and builder on a real bus", () => {
  it("a registered folder becomes a candidate, then a build with its archive and manifest stored; a change makes the next", async () => {
    const dir = await folder({
      "mesh.yaml": toolsManifest("hello"),
      "src/tools.ts": 'import { greet } from "./greet.js";\nexport const tools = { greet };\n',
      "src/greet.ts": "export const greet = (n: string): string => `Hello, ${n}`;\n",
    });
    const { registration } = await registerModule(bus.operator, dir, { by: "ada" });
    assert.equal(registration.source.kind, "directory");
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    const candidates = await KvBucket.open(bus.admin, Bucket.candidates);
    await waitFor(candidates, "hello.1", () => true, "candidate 1");
    const built = await waitFor(
      builds,
      "hello.*",
      (b: Build) => b.status === "built",
      "hello built",
    );
    assert.equal(built.candidate, 1);
    const manifest = await (
      await KvBucket.open(bus.admin, Bucket.manifests)
    ).get(built.manifestDigest as string);
    assert.equal(manifest?.value.bundles[0]?.digest, built.bundles[0]?.digest);
    const store = await ArtifactStore.open(bus.admin);
    assert.equal(
      (await store.info(built.bundles[0]?.digest as string))?.size,
      built.bundles[0]?.size,
    );

    await writeFile(
      join(dir, "src/greet.ts"),
      "export const greet = (n: string): string => `Hi, ${n}`;\n",
    );
    const second: Candidate = await waitFor(
      candidates,
      "hello.2",
      () => true,
      "candidate 2 after a change",
    );
    assert.notEqual(second.revision, built.candidate.toString());
    await waitFor(
      builds,
      "hello.*",
      (b: Build) => b.candidate === 2 && b.status === "built",
      "build 2",
    );
  });

  it("a candidate made while its module was removed is not a failed build: registered again, it is built", async () => {
    const dir = await folder({
      "mesh.yaml": toolsManifest("late"),
      "src/tools.ts": "export const tools = {};\n",
    });
    // As if the indexer made it just before `mesh module remove`: the source is unchanged, so
    // registering again makes no new candidate.
    const { revision, sourceDigest } = await revisionOf({ kind: "directory", path: dir });
    const candidates = await KvBucket.open(bus.admin, Bucket.candidates);
    const at = new Date().toISOString();
    await candidates.put("late.1", { module: "late", seq: 1, revision, sourceDigest, at });
    // The builder takes candidates one at a time, in order: once a later one is built, late's
    // was looked at.
    const after = await folder({
      "mesh.yaml": toolsManifest("after"),
      "src/tools.ts": "export const tools = {};\n",
    });
    await registerModule(bus.operator, after, { by: "ada" });
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    await waitFor(builds, "after.*", (b: Build) => b.status === "built", "after built");
    assert.deepEqual(await builds.keys("late.*"), [], "not built, and not failed either");
    await registerModule(bus.operator, dir, { by: "ada" });
    const built = await waitFor(
      builds,
      "late.*",
      (b: Build) => b.status !== "building",
      "late's candidate built once it is registered",
    );
    assert.equal(built.status, "built");
    assert.equal(built.candidate, 1);
    assert.deepEqual(await candidates.keys("late.*"), ["late.1"]);
  });

  it("a compile error gives a failed build with the compiler's message in its log", async () => {
    const dir = await folder({
      "mesh.yaml": toolsManifest("broken"),
      "src/tools.ts": "export const tools = {\n",
    });
    await registerModule(bus.operator, dir, { by: "ada" });
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    const failed = await waitFor(
      builds,
      "broken.*",
      (b: Build) => b.status === "failed",
      "a failed build",
    );
    assert.match(failed.log, /src\/tools\.ts:\d+:\d+: error:/);
    assert.ok(failed.error !== undefined && failed.error.length > 0);
    assert.equal(failed.manifestDigest, undefined);
  });

  it("a bad manifest is refused at registration with every problem, and nothing is registered", async () => {
    const dir = await folder({ "mesh.yaml": "module: Bad\nbundles: 3\n" });
    await assert.rejects(registerModule(bus.operator, dir, { by: "ada" }), (e: unknown) => {
      assert.ok(isMeshError(e, "MANIFEST_INVALID"));
      assert.match(e.message, /module/);
      assert.match(e.message, /bundles/);
      return true;
    });
  });

  it("a local git repository: a candidate per commit on the ref", async () => {
    const repo = await folder({
      "mesh.yaml": toolsManifest("gitmod"),
      "src/tools.ts": "export const tools = {};\n",
    });
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repo })
        .toString()
        .trim();
    git("init", "--quiet", "-b", "main");
    git("add", ".");
    git("commit", "--quiet", "-m", "one");
    const first = git("rev-parse", "HEAD");
    await registerModule(bus.operator, `file://${repo}#main`, { by: "ada" });
    const candidates = await KvBucket.open(bus.admin, Bucket.candidates);
    const c1 = await waitFor(candidates, "gitmod.1", () => true, "git candidate 1");
    assert.equal(c1.revision, first);
    await writeFile(join(repo, "src/tools.ts"), "export const tools = { a: 1 };\n");
    git("commit", "--quiet", "-am", "two");
    const c2 = await waitFor(candidates, "gitmod.2", () => true, "git candidate 2 after a commit");
    assert.equal(c2.revision, git("rev-parse", "HEAD"));
    const builds = await KvBucket.open(bus.admin, Bucket.builds);
    await waitFor(
      builds,
      "gitmod.*",
      (b: Build) => b.candidate === 2 && b.status === "built",
      "git build 2",
    );
  });
});
