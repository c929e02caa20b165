/**
 * Seed 003's agreement test for each of delivery's parts (issue 24, decisions 0122 and 0190): what
 * each part's code opens of the mesh is exactly what its manifest names in `reads` and `writes`, so
 * the grant derived from the manifest is what the code uses, and nothing it does not. Each part's
 * code lists what it uses (the assigner's daemon and its put tools their buckets, the indexer and
 * the builder their `mesh/<name>`s) and the manifest is held equal to the list; the indexer's and
 * the builder's lists are also heard on a real bus, as the requests their connection sends (the
 * replies go to the delivery credential's own inbox).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KvBucket, type MeshBus } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";
import { firstPut } from "@mesh/bus/testing";
import { isAllowed } from "@mesh/core";
import {
  Bucket,
  MESH_OWNER,
  MeshPart,
  Principal,
  Stream,
  inboxPrefix,
  type Manifest,
  type Permissions,
} from "@mesh/protocol";
import { ASSIGNER_BUCKETS } from "./assigner/assigner.js";
import { OWN_BUCKETS } from "./assigner/maps.js";
import { PUT_TOOL_READS, PUT_TOOL_WRITES } from "./assigner/put-tools.js";
import { BUILDER_USES, Builder } from "./builder.js";
import { BuildModule } from "./build-modules/build-module.js";
import { typescriptBuilder } from "./build-modules/typescript.js";
import { INDEXER_USES, Indexer } from "./indexer.js";
import { partsPrincipalGrant, readPartManifest } from "./parts.js";
import { registerModule } from "./register.js";
import { folderWith, startDeliveryBus, toolsManifest, type DeliveryBus } from "./test-support.js";

/** `mesh/wants` → `mesh-wants`; `mesh/build` stays the asks' name. */
const named = (refs: readonly string[] = []): string[] =>
  refs.map((r) => `${MESH_OWNER}-${r.slice(MESH_OWNER.length + 1)}`).sort();

const sorted = (names: Iterable<string>): string[] => [...new Set(names)].sort();

describe("the assigner's manifest and its code", () => {
  let manifest: Manifest;
  before(async () => {
    manifest = await readPartManifest(MeshPart.assigner);
  });

  it("reads and writes exactly the buckets its daemon and its tools open, and the conditions stream", () => {
    assert.deepEqual(
      sorted([...named(manifest.reads), ...named(manifest.writes)]),
      sorted([...ASSIGNER_BUCKETS, Stream.conditions, ...PUT_TOOL_READS, ...PUT_TOOL_WRITES]),
    );
  });

  it("writes exactly the buckets its daemon and its tools write", () => {
    assert.deepEqual(
      named(manifest.writes),
      sorted([...OWN_BUCKETS, Bucket.summary, ...PUT_TOOL_WRITES]),
    );
  });
});

describe("the indexer's and the builder's manifests and their code's lists", () => {
  for (const [part, uses] of [
    [MeshPart.indexer, INDEXER_USES],
    [MeshPart.builder, BUILDER_USES],
  ] as const) {
    it(`${part} reads and writes exactly what its code lists`, async () => {
      const manifest = await readPartManifest(part);
      assert.deepEqual([...manifest.reads].sort(), [...uses.reads].sort(), `${part}: reads`);
      assert.deepEqual(
        [...(manifest.writes ?? [])].sort(),
        [...uses.writes].sort(),
        `${part}: writes`,
      );
    });
  }
});

/** What the grant of `mesh up`'s assigner lets through (moved here from core: it is the manifest's now). */
describe("the assigner's grant, from its manifest", () => {
  let p: Permissions;
  before(async () => {
    p = await partsPrincipalGrant(Principal.assigner, { node: "n0" });
  });
  const can = (subject: string): boolean => isAllowed(p, "publish", subject);
  const watch = (b: string) => `$JS.API.CONSUMER.CREATE.KV_${b}.oc_X_1.$KV.${b}.>`;
  const put = (b: string) => `$KV.${b}.a.b`;
  const writes: readonly string[] = [...OWN_BUCKETS, Bucket.summary, ...PUT_TOOL_WRITES];

  it("reads what a pass reads and writes only its own", () => {
    for (const bucket of ASSIGNER_BUCKETS) assert.ok(can(watch(bucket)), bucket);
    for (const bucket of writes) assert.ok(can(put(bucket)), bucket);
    for (const bucket of ASSIGNER_BUCKETS.filter((b) => !writes.includes(b)))
      assert.equal(can(put(bucket)), false, bucket);
    // A config rollout writes nodes' values into mesh-config (decision 0131); secrets stay out.
    assert.ok(can(put(Bucket.config)));
    assert.equal(can(watch(Bucket.secrets)), false);
  });

  it("says conditions and what it keeps as the assigner, and reads every module's conditions", () => {
    assert.ok(can("mesh.conditions.assigner.set-back"));
    assert.ok(can("mesh.keeps.n0.assigner"));
    assert.equal(can("mesh.conditions.hello.said"), false, "it says only its own");
    const create = "$JS.API.CONSUMER.CREATE.mesh-conditions.oc_1";
    assert.ok(can(`${create}.mesh.conditions.>`));
    assert.ok(can(`${create}.mesh.conditions.assigner.>`));
    assert.ok(isAllowed(p, "subscribe", "_INBOX.n0.assigner.x"));
  });
});

/** Every mesh resource a request names, and whether it writes it. */
function resourceOf(subject: string): { name: string; write: boolean } | undefined {
  const kvWrite = /^\$KV\.([^.]+)\./.exec(subject);
  if (kvWrite !== null) return { name: kvWrite[1] as string, write: true };
  const objWrite = /^\$O\.([^.]+)\.[CM]\./.exec(subject);
  if (objWrite !== null) return { name: objWrite[1] as string, write: true };
  if (subject.startsWith("mesh.build.")) return { name: "mesh-build", write: true };
  const api = /^\$JS\.API\.[A-Z.]+\.(?:KV_|OBJ_)?(mesh-[a-z-]+)/.exec(subject);
  if (api === null) return undefined;
  const write = /^\$JS\.API\.STREAM\.PURGE\./.test(subject);
  return { name: api[1] as string, write };
}

describe("the indexer's and the builder's manifests and what their code does on a real bus", () => {
  const node = "n0";
  let bus: DeliveryBus;
  let buildBus: MeshBus | undefined;
  const stop = new AbortController();
  const heard: { subject: string; phase: "indexer" | "builder" }[] = [];
  let phase: "indexer" | "builder" = "indexer";

  before(async () => {
    bus = await startDeliveryBus(node);
    const { nc } = natsOf(bus.admin);
    const own = `${inboxPrefix(node, Principal.delivery)}.`;
    const sub = nc.subscribe(">");
    void (async () => {
      for await (const m of sub) {
        if (m.reply?.startsWith(own) === true) heard.push({ subject: m.subject, phase });
      }
    })();
    await nc.flush();
  });

  after(async () => {
    stop.abort();
    await buildBus?.close();
    await bus?.[Symbol.asyncDispose]();
  });

  /** Waits for the first value under `key` that passes `test`, as the admin reads it. */
  async function firstPutAsAdmin(
    name: Bucket,
    key: string,
    test: (value: { status?: string }) => boolean,
    what: string,
  ): Promise<void> {
    const bucket = (await KvBucket.open(bus.admin, name)) as KvBucket<{ status?: string }>;
    await firstPut(bucket, key, { until: test, what, timeout: 60_000 });
  }

  const touched = (of: "indexer" | "builder", writesOnly = false): string[] =>
    sorted(
      heard
        .filter((h) => h.phase === of)
        .map((h) => resourceOf(h.subject))
        .filter((r): r is { name: string; write: boolean } => r !== undefined)
        .filter((r) => !writesOnly || r.write)
        .map((r) => r.name),
    );

  it("the indexer opens what its manifest names, then the builder", async () => {
    const indexer = await Indexer.create({ bus: bus.delivery, debounceMs: 100 });
    void indexer.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
    const dir = await folderWith({
      "mesh.yaml": toolsManifest("hello"),
      "src/tools.ts": "export const tools = {};\n",
    });
    await registerModule(bus.operator, dir, { by: "ada" });
    await firstPutAsAdmin(Bucket.candidates, "hello.1", () => true, "candidate 1");

    phase = "builder";
    buildBus = await bus.connectBuild();
    const typescript = await BuildModule.create({ bus: buildBus, builder: typescriptBuilder });
    void typescript.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
    const builder = await Builder.create({ bus: bus.delivery });
    void builder.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
    await firstPutAsAdmin(Bucket.builds, "hello.>", (v) => v.status === "built", "hello's build");

    for (const [part, uses] of [
      [MeshPart.indexer, INDEXER_USES],
      [MeshPart.builder, BUILDER_USES],
    ] as const) {
      const of = part === MeshPart.indexer ? "indexer" : "builder";
      assert.deepEqual(
        touched(of),
        sorted([...named(uses.reads), ...named(uses.writes)]),
        `${part}: what its code opened and what its code lists`,
      );
      assert.deepEqual(touched(of, true), named(uses.writes), `${part}: what it wrote`);
    }
  });
});
