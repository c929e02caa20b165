/**
 * A rollout steered from the view's page (issues 22 and 26), in headless Chromium, against a
 * real bus, controller and assigner: four nodes run hello build 1-a (their hosts simulated on
 * the bus: each beats, and reports healthy the build it is wanted), and build 2-b rolls out
 * canary first. The rollouts panel shows the waves and the canary's health as its host reports
 * it; pause, resume, abort, retry and promote are each clicked, confirmed as the CLI command, and
 * their effect on the mesh read back through the CLI (`mesh rollout status --json`, `mesh wants
 * --json`), as the assigner decided it. Screenshot under `test-results/view/`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { KvBucket, MeshBus } from "@mesh/bus";
import { credentialFor, stretched, waitFor } from "@mesh/bus/testing";
import { fingerprintOf } from "@mesh/core";
import { Assigner } from "@mesh/delivery";
import { Bucket, Principal, buildKey, type Have } from "@mesh/protocol";
import type { View } from "@mesh/view";
import { TestChromium, keepScreenshot, openView } from "@mesh/view/testing";
import {
  startControllerMesh,
  operatorView,
  type ControllerMesh,
} from "../../testing/controller-mesh.js";
import { healthyHave, helloManifest, seedRunning } from "../../testing/fixtures.js";

const WAIT_MS = stretched(5_000);
const NODES = ["n1", "n2", "n3", "n4"];

describe("a rollout steered from the view in Chromium", () => {
  let mesh: ControllerMesh;
  let assignerBus: MeshBus;
  let view: View;
  const stop = new AbortController();
  const chromium = new TestChromium(WAIT_MS, { after });
  const { step } = chromium;

  before(async () => {
    mesh = await startControllerMesh();
    await mesh.register("hello");
    const at = new Date().toISOString();
    const manifest = helloManifest();
    await seedRunning(mesh.put, manifest, { nodes: NODES, build: "1-a", at });
    await mesh.put(Bucket.assignments, "all.hello", { by: "ada", at });
    // Canary 1, then one node a wave; an hour of health before each: no gate holds by itself.
    await mesh.put(Bucket.rolloutPolicies, "hello", {
      policy: { canary: 1, batch: 1, "min-healthy": "1h" },
      by: "ada",
      at,
    });
    await mesh.put(Bucket.builds, buildKey("hello", "1-a"), builtOf("1-a", 1, manifest));
    void reportAsWanted(mesh.admin, stop.signal);
    await beatWhileRunning(mesh.admin, stop.signal);
    assignerBus = await MeshBus.connect(
      credentialFor(mesh.server, mesh.server.admin, { node: "hub", module: Principal.assigner }),
    );
    const assigner = await Assigner.create({ bus: assignerBus });
    void assigner.run({ signal: stop.signal }).catch(() => undefined);
    view = await operatorView(mesh);
    // The rollout begins: build 2-b is built.
    await mesh.put(Bucket.builds, buildKey("hello", "2-b"), builtOf("2-b", 2, manifest));
  });
  after(async () => {
    stop.abort();
    await view?.close();
    await assignerBus?.close();
    await mesh?.[Symbol.asyncDispose]();
  });

  it("shows the canary's health and steers the rollout: pause, resume, abort, retry, promote", async () => {
    const page = await chromium.newPage();
    const t: Steps = { page, mesh };
    await step("open: the canary given and healthy", async () => {
      await openView(page, view.url);
      const row = rowOf(page, "rolling");
      await row.locator('[data-canary="n1"][data-canary-health="healthy"]').waitFor();
      assert.equal(await row.locator("[data-wave]").getAttribute("data-wave"), "1/4");
      assert.deepEqual(await wanting(t, "2-b"), ["n1"]);
    });
    await step("pause", async () => {
      await steer(t, "rolling", "pause");
      await statusIs(t, (r) => r.status === "paused");
    });
    await step("resume", async () => {
      await steer(t, "paused", "resume");
      await statusIs(t, (r) => r.status === "rolling" && r.wave === 1);
    });
    await step("abort: every node back on 1-a", async () => {
      await steer(t, "rolling", "abort");
      await statusIs(t, (r) => r.status === "aborted");
      await until(async () => (await wanting(t, "1-a")).length === NODES.length, "all on 1-a");
      await rowOf(page, "aborted").locator('[data-canary-health="not running it"]').waitFor();
    });
    await step("retry: the canary again, attempt 2", async () => {
      await steer(t, "aborted", "retry");
      await statusIs(t, (r) => r.status === "rolling" && r.attempt === 2);
      await until(async () => (await wanting(t, "2-b")).length === 1, "the canary again");
    });
    await step("promote: every node at once", async () => {
      await rowOf(page, "rolling").locator('[data-canary-health="healthy"]').waitFor();
      await steer(t, "rolling", "promote");
      await until(async () => (await wanting(t, "2-b")).length === NODES.length, "all on 2-b");
      await statusIs(t, (r) => r.healthy === NODES.length);
      await keepScreenshot(page, "rollouts-steered");
    });
    assert.deepEqual(chromium.pageErrors, []);
  });
});

interface Steps {
  readonly page: Page;
  readonly mesh: ControllerMesh;
}

/** A build of hello as the builder leaves it: every bundle of its manifest stored. */
function builtOf(build: string, candidate: number, manifest: ReturnType<typeof helloManifest>) {
  const at = new Date().toISOString();
  return {
    module: "hello",
    build,
    status: "built",
    candidate,
    manifestDigest: fingerprintOf(manifest),
    bundles: manifest.bundles.map((b) => ({ name: b.name, digest: b.digest, size: b.size ?? 1 })),
    log: "",
    timings: { started: at, finished: at, ms: 1 },
  };
}

/** Each node's host, simulated: it reports the build it is wanted, healthy from now. */
async function reportAsWanted(admin: MeshBus, signal: AbortSignal): Promise<void> {
  const wants = await KvBucket.open(admin, Bucket.wants);
  const have = await KvBucket.open(admin, Bucket.have);
  try {
    for await (const e of wants.watch({ key: "*.hello", signal })) {
      if (e.type !== "put") continue;
      const said = (await have.get(e.key))?.value;
      if (said?.build === e.value.build) continue;
      await have.put(e.key, healthyHave(e.value.build, new Date().toISOString()) as Have);
    }
  } catch {
    // Stopped with the test.
  }
}

/** Each node's heartbeat every 5 s, as its host beats, until the test stops: nodes stay present. */
async function beatWhileRunning(admin: MeshBus, signal: AbortSignal): Promise<void> {
  const presence = await KvBucket.open(admin, Bucket.presence);
  const beat = async (): Promise<void> => {
    for (const node of NODES) {
      const before = (await presence.get(node))?.value;
      if (before !== undefined)
        await presence.put(node, { ...before, heartbeat: new Date().toISOString() });
    }
  };
  await beat();
  const timer = setInterval(() => void beat().catch(() => undefined), 5_000);
  signal.addEventListener("abort", () => clearInterval(timer), { once: true });
}

const rowOf = (page: Page, status: string) =>
  page.locator(`#rollouts tr[data-rollout="hello"][data-status="${status}"]`);

/** Clicks a steer on the row in `status`, checks the command it confirms, and confirms it. */
async function steer(t: Steps, status: string, word: string): Promise<void> {
  await rowOf(t.page, status).locator(`[data-steer="${word}"]`).click();
  const confirm = t.page.locator("#action-confirm .confirm");
  assert.match(await confirm.innerText(), new RegExp(`mesh rollout ${word} hello`));
  await confirm.locator('[data-confirm="yes"]').click();
  await t.page.locator('#action-result [data-result="ok"]', { hasText: `said ${word}` }).waitFor();
}

async function cli<T>(t: Steps, args: readonly string[]): Promise<T> {
  const run = await t.mesh.run([...args, "--json"]);
  assert.equal(run.code, 0, `${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout) as T;
}

interface Row {
  status: string;
  wave: number;
  attempt: number;
  healthy: number;
}

const until = (test: () => Promise<boolean>, what: string) =>
  waitFor(async () => (await test()) || undefined, { what, timeout: 60_000 });

/** Waits until `mesh rollout status hello --json` says what `test` looks for. */
async function statusIs(t: Steps, test: (r: Row) => boolean): Promise<void> {
  await until(async () => {
    const got = await cli<{ rollouts: Row[] }>(t, ["rollout", "status", "hello"]);
    const r = got.rollouts[0];
    return r !== undefined && test(r);
  }, "mesh rollout status to say so");
}

/** The nodes `mesh wants` says are wanted `build` of hello, sorted. */
async function wanting(t: Steps, build: string): Promise<string[]> {
  const got = await cli<{ wants: Record<string, { build: string }> }>(t, [
    "wants",
    "--module",
    "hello",
  ]);
  return Object.entries(got.wants)
    .filter(([, w]) => w.build === build)
    .map(([k]) => k.split(".")[0] as string)
    .sort();
}
