/**
 * Waves for every language (issue 25, decision 0130), on a real mesh of three hosts: `mesh up` on
 * w1 and `mesh join` of w2 and w3, each from a root of its own. examples/modules/hello-python and
 * hello-go run on all three; a second good build of each reaches the canary (w1) first and the
 * other two only once the canary ran it healthy for `min-healthy` (read from the buckets' own
 * history: the wants and the reports, with the server's times); then a build of hello-python that
 * crashes at start halts at the canary: w1 is set back to the good build, the condition says so,
 * and w2 and w3 are never given it. Each source variant is built once (a Go build is slow).
 * A module in a language no build module builds is refused naming the languages the mesh has.
 */
import assert from "node:assert/strict";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus } from "@mesh/bus";
import { Bucket, nodeModuleKey, type Rollout } from "@mesh/protocol";
import { EXAMPLES, LANGUAGES, LONG } from "../testing/languages-suite.js";
import { joinMeshUp, startMeshUp, type JoinedNode, type MeshUp } from "../testing/mesh-up.js";
import { meshJsonAt, runMesh } from "../testing/run-mesh.js";
import { statusOf, until as waitUntil } from "../testing/until.js";

const NODES = ["w1", "w2", "w3"] as const;
/** order: name makes w1 the canary. */
const CANARY = "w1";
const MIN_HEALTHY_MS = 5_000;

let mesh: MeshUp | undefined;
let joined: JoinedNode[] = [];
let operator: MeshBus | undefined;
let scratch = "";

const mesh0 = (args: readonly string[], stdin?: string): Promise<Record<string, unknown>> =>
  meshJsonAt(mesh?.root ?? "", args, stdin);

const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(mesh?.root ?? "") });

/** greet's text on one node, or undefined while nothing answers there. */
async function greet(module: string, node: string): Promise<string | undefined> {
  const run = await runMesh([
    ...["call", `${module}/greet`, JSON.stringify({ name: "Ada" }), "--node", node],
    ...["--root", mesh?.root ?? ""],
  ]);
  return run.code === 0 ? (JSON.parse(run.stdout) as { text: string }).text : undefined;
}

async function bucketOf<
  B extends typeof Bucket.wants | typeof Bucket.have | typeof Bucket.rollouts,
>(bucket: B) {
  assert.ok(operator !== undefined);
  return KvBucket.open(operator, bucket);
}

const wantOf = async (node: string, module: string) =>
  (await (await bucketOf(Bucket.wants)).get(nodeModuleKey(node, module)))?.value;
const haveOf = async (node: string, module: string) =>
  (await (await bucketOf(Bucket.have)).get(nodeModuleKey(node, module)))?.value;
const rolloutOf = async (module: string): Promise<Rollout | undefined> =>
  (await (await bucketOf(Bucket.rollouts)).get(module))?.value;

/** One write to mesh-wants or mesh-have about a module, at the server's time. */
interface Step {
  readonly at: number;
  readonly node: string;
  readonly kind: "want" | "have";
  readonly build: string | undefined;
  readonly rule?: string;
  readonly health?: string;
  readonly since?: number;
}

/** Every kept write of the module's wants and reports, oldest first. */
async function timeline(module: string): Promise<Step[]> {
  const steps: Step[] = [];
  const node = (key: string) => key.split(".")[0] as string;
  for await (const e of (await bucketOf(Bucket.wants)).watch({
    key: `*.${module}`,
    include: "history",
  })) {
    if (e.type === "current") break;
    if (e.type !== "put") continue;
    const { build, rule } = e.value;
    steps.push({ at: e.created.getTime(), node: node(e.key), kind: "want", build, rule });
  }
  for await (const e of (await bucketOf(Bucket.have)).watch({
    key: `*.${module}`,
    include: "history",
  })) {
    if (e.type === "current") break;
    if (e.type !== "put") continue;
    const { build, health, since } = e.value;
    steps.push({
      ...{ at: e.created.getTime(), node: node(e.key), kind: "have", build, health },
      since: Date.parse(since),
    });
  }
  return steps.sort((a, b) => a.at - b.at);
}

/** The module's build every node runs healthy, once all three run the same one. */
async function healthyEverywhere(module: string, not?: string): Promise<string | undefined> {
  const builds = new Set<string | undefined>();
  for (const node of NODES) {
    const have = await haveOf(node, module);
    if (have?.health !== "healthy" || have.build === not) return undefined;
    builds.add(have.build);
  }
  return builds.size === 1 ? [...builds][0] : undefined;
}

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mesh-languages-waves-"));
  mesh = await startMeshUp({ root: join(scratch, "w1"), node: "w1" });
  for (const node of NODES.slice(1)) {
    joined.push(await joinMeshUp(mesh, { node, root: join(scratch, node) }));
  }
  operator = await MeshBus.connectWithFile(mesh.report.credentials.operator, {
    say: () => undefined,
  });
  for (const { module } of LANGUAGES) {
    await cp(join(EXAMPLES, module), join(scratch, "sources", module), { recursive: true });
    await mesh0(["module", "add", join(scratch, "sources", module)]);
    await mesh0(["secret", "set", module, "api-token"], "tok-1234567");
    // Canary, then the rest: two waves on three nodes.
    await mesh0([
      ...["rollout", "set", module, "--canary", "1", "--batch", "100%"],
      ...["--min-healthy", `${MIN_HEALTHY_MS / 1000}s`],
    ]);
    await mesh0(["assign", module, "--all"]);
  }
});

after(async () => {
  await operator?.close();
  for (const node of joined) await node.stop();
  joined = [];
  await mesh?.stop();
  if (scratch !== "") await rm(scratch, { recursive: true, force: true });
});

/** The first build of each module, running healthy on every node. */
const first = new Map<string, string>();
/** The second (good) build of each. */
const second = new Map<string, string>();

describe("waves apply to Python and Go modules alike, on three hosts", () => {
  test("each module's first build reaches every node at once (none has anything to keep) and answers there", async () => {
    for (const { module } of LANGUAGES) {
      for (const node of NODES) {
        const text = await until(() => greet(module, node), LONG, `${module} on ${node}`);
        assert.equal(text, "Hello, Ada!");
      }
      const build = await until(() => healthyEverywhere(module), LONG, `${module} healthy`);
      first.set(module, build);
      const steps = await timeline(module);
      assert.ok(
        steps.every((s) => s.kind !== "want" || s.rule !== "waves"),
        `a first deploy is not waved: ${JSON.stringify(steps)}`,
      );
    }
  });

  test("a second good build of each goes to the canary, and to the other nodes once the canary ran it healthy for min-healthy", async () => {
    for (const { module, main } of LANGUAGES) {
      const file = join(scratch, "sources", module, main);
      const text = await readFile(file, "utf8");
      assert.equal(text.split("serving on").length, 2, `${main} prints "serving on" once`);
      await writeFile(file, text.replace("serving on", "serving (second build) on"));
    }
    for (const { module } of LANGUAGES) {
      const done = await until(
        async () => {
          const r = await rolloutOf(module);
          return r !== undefined && r.build !== first.get(module) && r.status === "done"
            ? r
            : undefined;
        },
        LONG,
        `${module}'s second build rolled out`,
      );
      assert.equal(done.waves, 2, "the canary, then the rest");
      assert.deepEqual(done.admitted, [...NODES]);
      const build = done.build;
      second.set(module, build);
      const steps = await timeline(module);
      const given = (node: string) =>
        steps.find((s) => s.kind === "want" && s.node === node && s.build === build);
      const proven = steps.find(
        (s) =>
          s.kind === "have" && s.node === CANARY && s.build === build && s.health === "healthy",
      );
      const canary = given(CANARY);
      assert.ok(canary !== undefined && proven?.since !== undefined, JSON.stringify(steps));
      for (const node of NODES.filter((n) => n !== CANARY)) {
        const rest = given(node);
        assert.ok(rest !== undefined, `${node} was given ${build}: ${JSON.stringify(steps)}`);
        assert.ok(
          rest.at >= proven.since + MIN_HEALTHY_MS,
          `${node} was given ${build} at ${rest.at}, before the canary ran it healthy for ${MIN_HEALTHY_MS} ms (since ${proven.since})`,
        );
        // Meanwhile its want said it waits for the waves, on the build it ran.
        assert.ok(
          steps.some(
            (s) =>
              s.kind === "want" &&
              s.node === node &&
              s.rule === "waves" &&
              s.build === first.get(module) &&
              s.at >= canary.at &&
              s.at <= rest.at,
          ),
          `${node} waited with rule waves: ${JSON.stringify(steps)}`,
        );
      }
      assert.equal(
        await until(() => healthyEverywhere(module, first.get(module)), LONG, `${module} healthy`),
        build,
      );
      for (const node of NODES) {
        const logs = await runMesh(["logs", module, "--node", node, "--root", mesh?.root ?? ""]);
        assert.match(logs.stdout, new RegExp(`${module} serving \\(second build\\) on ${node}`));
      }
    }
  });

  test("a Python build that crashes at start halts at the canary: w1 is set back, the condition says so, no other node is given it", async () => {
    const python = LANGUAGES.find((l) => l.language === "python");
    assert.ok(python !== undefined);
    const { module, main, crash } = python;
    const good = second.get(module);
    assert.ok(good !== undefined, "the second build rolled out");
    await writeFile(join(scratch, "sources", module, main), crash);
    const halted = await until(
      async () => {
        const r = await rolloutOf(module);
        return r !== undefined && r.build !== good && r.status === "failed" ? r : undefined;
      },
      LONG,
      `${module}'s crashing build halted`,
    );
    assert.equal(halted.wave, 1, "halted at the canary's wave");
    assert.deepEqual(
      halted.failed?.nodes.map((n) => n.node),
      [CANARY],
    );
    // The canary by its own failure (rule set-back), the others by the halt; all on the good build.
    const set = await until(
      async () => {
        const wants = await Promise.all(NODES.map((n) => wantOf(n, module)));
        return wants.every((w) => w?.build === good) ? wants : undefined;
      },
      LONG,
      "every node wanted the good build",
    );
    assert.match(set[0]?.rule ?? "", /^(set-back|halt)$/);
    assert.deepEqual(
      set.slice(1).map((w) => w?.rule),
      ["halt", "halt"],
    );
    const { conditions } = (await mesh0(["conditions"])) as {
      conditions: Array<{ name: string; message: string; resolved?: boolean }>;
    };
    const said = conditions.find((c) => c.name === `rollout-failed-${module}` && !c.resolved);
    assert.ok(said !== undefined, JSON.stringify(conditions));
    assert.match(said.message, new RegExp(`build ${halted.build} halted at wave 1 of 2`));
    assert.match(said.message, new RegExp(`${CANARY} \\(`));
    assert.match(said.message, new RegExp(`set back to build ${good}`));
    assert.match(said.message, new RegExp(`mesh rollout retry ${module}`));
    const steps = await timeline(module);
    const elsewhere = steps.filter((s) => s.node !== CANARY && s.build === halted.build);
    assert.deepEqual(elsewhere, [], "no node but the canary was given the crashing build");
    for (const node of NODES) {
      assert.equal(
        await until(() => greet(module, node), LONG, `${module} on ${node} after the halt`),
        "Hello, Ada!",
      );
    }
    const go = await rolloutOf("hello-go");
    assert.deepEqual([go?.build, go?.status], [second.get("hello-go"), "done"]);
  });

  test("a module in a language no build module builds is refused naming the languages the mesh has", async () => {
    const dir = join(scratch, "sources", "rusty");
    await cp(join(EXAMPLES, "hello-go"), dir, { recursive: true });
    const manifest = await readFile(join(dir, "mesh.yaml"), "utf8");
    await writeFile(
      join(dir, "mesh.yaml"),
      manifest
        .replace("module: hello-go", "module: rusty")
        .replace("language: go", "language: rust"),
    );
    const run = await runMesh(["module", "add", dir, "--root", mesh?.root ?? ""]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr + run.stdout, /"rust"/);
    assert.match(run.stderr + run.stdout, /this mesh has build modules for go, python, typescript/);
    assert.match(run.stderr + run.stdout, /MANIFEST_INVALID/);
  });
});
