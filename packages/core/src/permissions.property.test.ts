import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  Manifest,
  RUNTIME_MODULE,
  type Stream,
  StreamSpec,
  parseStateBucket,
  type Permissions,
} from "@mesh/protocol";
import {
  type DerivedGrant,
  hostGrant,
  isAllowed,
  mcpGrant,
  mcpPrincipal,
  moduleGrant,
  operatorGrant,
  partGrant,
  runtimeGrant,
  subjectMatches,
} from "./permissions.js";
import { NO_RIGHTS, toPermissions, type Rights } from "./permissions/rights.js";
import { EVERY_RESOURCE_PART } from "./permissions/test-support.js";

// A small world, so that reads often hit declared states, unreadable ones and unknown modules.
const MODULES = ["a", "b", "c", "d", RUNTIME_MODULE] as const;
const STATES = ["s", "t", "u"] as const;
const TOOLS = ["go", "do_it"] as const;
const NODES = ["n1", "n2", "edge-01"] as const;

const refs = (left: readonly string[], right: readonly string[]) =>
  left.flatMap((l) => right.map((r) => `${l}/${r}`));

const manifestArb = (module: string) =>
  fc
    .record({
      states: fc.uniqueArray(
        fc.record({ name: fc.constantFrom(...STATES), readable: fc.boolean() }),
        {
          selector: (s) => s.name,
        },
      ),
      // "z" is never a module of the world: its reads are always refused.
      reads: fc.uniqueArray(fc.constantFrom(...refs([...MODULES, "z"], STATES))),
      calls: fc.uniqueArray(fc.constantFrom(...refs(MODULES, TOOLS))),
      tools: fc.boolean(),
    })
    .map(({ states, reads, calls, tools }) =>
      Manifest.parse({
        module,
        bundles: [
          tools
            ? { name: "tools", language: "typescript", entrypoints: ["t.ts"], loads: ["t.ts"] }
            : { name: "main", language: "typescript", entrypoints: ["m.ts"] },
        ],
        states,
        reads,
        calls,
      }),
    );

/** A world of manifests, at most one per module; not every module of MODULES is in it. */
const worldArb = fc
  .subarray([...MODULES])
  .chain((names): fc.Arbitrary<Manifest[]> => fc.tuple(...names.map(manifestArb)));

const withNode = <T>(arb: fc.Arbitrary<T>) => fc.tuple(arb, fc.constantFrom(...NODES), fc.nat());

/** A deterministic shuffle, so a failing case replays from its seed. */
function shuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let x = seed | 1;
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    const j = Math.abs(x) % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** The same manifest with every list in another order. */
const reorder = (m: Manifest, seed: number): Manifest => ({
  ...m,
  states: shuffle(m.states, seed),
  reads: shuffle(m.reads, seed + 1),
  calls: shuffle(m.calls, seed + 2),
  bundles: shuffle(m.bundles, seed + 3),
});

const ownersOf = (world: readonly Manifest[]) =>
  Object.fromEntries(world.map((m) => [m.module, m]));
const ownersAsMap = (world: readonly Manifest[], seed: number) =>
  new Map(shuffle(world, seed).map((m) => [m.module, m.states]));

const isModule = (m: Manifest) => m.module !== RUNTIME_MODULE;

/** Every subject of a grant, both sides, allow and deny. */
const subjectsOf = (p: Permissions): string[] => [
  ...(p.publish.allow ?? []),
  ...(p.publish.deny ?? []),
  ...(p.subscribe.allow ?? []),
  ...(p.subscribe.deny ?? []),
];

/** Every state bucket a subject names, as `$KV.<bucket>` or as the stream `KV_<bucket>`. */
function stateBucketsIn(subject: string): string[] {
  const tokens = subject.split(".");
  const buckets = tokens.flatMap((token, i) => {
    if (token.startsWith("KV_")) return [token.slice(3)];
    if (token === "$KV" && tokens[i + 1] !== undefined) return [tokens[i + 1] as string];
    return [];
  });
  return buckets.filter((b) => parseStateBucket(b) !== undefined);
}

/** Whether `reader` may hold `<owner>_<state>`: its own, or a read its owner keeps readable. */
function mayHold(reader: Manifest, bucket: string, world: readonly Manifest[]): boolean {
  const parsed = parseStateBucket(bucket);
  if (parsed === undefined) return false;
  const { module, state } = parsed;
  if (module === reader.module) return reader.states.some((s) => s.name === state);
  const owner = world.find((m) => m.module === module);
  return (
    reader.reads.includes(`${module}/${state}`) &&
    owner !== undefined &&
    owner.states.some((s) => s.name === state && s.readable)
  );
}

/** Every grant a world gives, by who holds it. */
function everyGrant(world: readonly Manifest[], node: string): [string, Permissions][] {
  const owners = ownersOf(world);
  return [
    ...world
      .filter(isModule)
      .map((m): [string, Permissions] => [
        m.module,
        moduleGrant({ node, manifest: m, owners }).permissions,
      ]),
    [RUNTIME_MODULE, runtimeGrant({ node, modules: world, owners }).permissions],
    ["host", hostGrant({ node })],
    ["operator", operatorGrant({ node })],
    ["mcp", mcpGrant({ node })],
    ...narrowedMcp(world, node),
    // A part naming every mesh resource it may: the widest grant a part's manifest derives.
    ["assigner", partGrant({ node, principal: "assigner", parts: [EVERY_RESOURCE_PART] })],
    // A credential with no rights at all: both sides must come out as `deny: [">"]`.
    ["nobody", toPermissions(NO_RIGHTS)],
  ];
}

/** `mesh mcp --allow` for the world's modules, under its own principal (none when there are none). */
function narrowedMcp(world: readonly Manifest[], node: string): [string, Permissions][] {
  const modules = world.filter(isModule).map((m) => m.module);
  if (modules.length === 0) return [];
  return [[mcpPrincipal(modules), mcpGrant({ node, modules })]];
}

const allowLists = (p: Permissions) => [p.publish.allow, p.subscribe.allow];

describe("permissions, for any set of manifests", () => {
  test("deterministic and independent of the order of every input", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node, seed]) => {
        const owners = ownersOf(world);
        const reordered = shuffle(world, seed).map((m, i) => reorder(m, seed + i));
        for (const m of world.filter(isModule)) {
          const once: DerivedGrant = moduleGrant({ node, manifest: m, owners });
          const again = moduleGrant({
            node,
            manifest: reorder(m, seed),
            owners: ownersAsMap(reordered, seed),
          });
          assert.deepEqual(again, once);
          assert.equal(JSON.stringify(again), JSON.stringify(once));
        }
        const runtime = runtimeGrant({ node, modules: world, owners });
        const runtimeAgain = runtimeGrant({
          node,
          modules: reordered,
          owners: ownersAsMap(world, seed + 7),
        });
        assert.equal(JSON.stringify(runtimeAgain), JSON.stringify(runtime));
      }),
    );
  });

  test("a module never names another module's state unless it reads it and its owner keeps it readable", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        const owners = ownersOf(world);
        for (const m of world.filter(isModule)) {
          const { permissions, problems } = moduleGrant({ node, manifest: m, owners });
          for (const subject of subjectsOf(permissions)) {
            for (const bucket of stateBucketsIn(subject)) {
              assert.ok(mayHold(m, bucket, world), `${m.module} holds ${subject}`);
            }
          }
          // And every read that may be granted is, and every other is a problem.
          for (const read of m.reads) {
            const [owner, state] = read.split("/") as [string, string];
            const bucket = `${owner}_${state}`;
            const granted = isAllowed(
              permissions,
              "publish",
              `$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.k`,
            );
            assert.equal(granted, mayHold(m, bucket, world), read);
            assert.equal(
              problems.some((p) => p.read === read),
              !granted,
              read,
            );
          }
        }
      }),
    );
  });

  test("the runtime holds only what the modules it serves may hold", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        const { permissions } = runtimeGrant({ node, modules: world, owners: ownersOf(world) });
        const inside = world.filter(
          (m) => m.module === RUNTIME_MODULE || m.bundles.some((b) => (b.loads?.length ?? 0) > 0),
        );
        for (const subject of subjectsOf(permissions)) {
          for (const bucket of stateBucketsIn(subject)) {
            assert.ok(
              inside.some((m) => mayHold(m, bucket, world)),
              subject,
            );
          }
        }
      }),
    );
  });

  test("no list is empty; a side that allows nothing denies everything", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        for (const [who, p] of everyGrant(world, node)) {
          for (const side of [p.publish, p.subscribe]) {
            assert.ok(side.allow === undefined || side.allow.length > 0, who);
            assert.ok(side.allow !== undefined || (side.deny ?? []).includes(">"), who);
          }
        }
      }),
    );
  });

  test("a grant allows exactly what its rights name: a side with none allows nothing, never `allow: []`", () => {
    // The server reads an empty allow list as "everything", and so does isAllowed.
    const subjects = ["a.b", "a.*", "$KV.x.k", "$KV.x.>", "_INBOX.n.m.>", "mesh.logs.n.m", ">"];
    const rightsArb: fc.Arbitrary<Rights> = fc.record({
      publish: fc.array(fc.constantFrom(...subjects), { maxLength: 4 }),
      subscribe: fc.array(fc.constantFrom(...subjects), { maxLength: 4 }),
    });
    const probes = ["a.b", "a.c", "$KV.x.k", "$KV.y.k", "_INBOX.n.m.r", "mesh.logs.n.m", "z"];
    fc.assert(
      fc.property(rightsArb, (rights) => {
        const p = toPermissions(rights);
        for (const action of ["publish", "subscribe"] as const) {
          const side = p[action];
          assert.ok(side.allow === undefined || side.allow.length > 0, `${action}: allow: []`);
          for (const subject of probes) {
            assert.equal(
              isAllowed(p, action, subject),
              rights[action].some((pattern) => subjectMatches(pattern, subject)),
              `${action} ${subject} with ${JSON.stringify(rights[action])}`,
            );
          }
        }
      }),
    );
  });

  test("lists are sorted and without repeats", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        for (const [who, p] of everyGrant(world, node)) {
          for (const list of allowLists(p)) {
            if (list === undefined) continue;
            assert.deepEqual(list, [...new Set(list)].sort(), who);
          }
        }
      }),
    );
  });

  test("no one but the controller creates, changes or deletes a stream; only the operator asks for $JS.API.INFO", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        for (const [who, p] of everyGrant(world, node)) {
          const streams = [
            "X",
            "KV_mesh-modules",
            "OBJ_mesh-artifacts",
            "mesh-conditions",
            ...world.flatMap((m) => m.states.map((s) => `KV_${m.module}_${s.name}`)),
          ];
          for (const stream of streams) {
            for (const op of ["CREATE", "UPDATE", "DELETE"]) {
              assert.equal(
                isAllowed(p, "publish", `$JS.API.STREAM.${op}.${stream}`),
                false,
                `${who} ${op} ${stream}`,
              );
            }
          }
          // The operator lists streams like the nats CLI (decision 0070): read-only account info.
          assert.equal(isAllowed(p, "publish", "$JS.API.INFO"), who === "operator", who);
        }
      }),
    );
  });

  test("flow control wherever a consumer may be created, and every consumer's filter inside its stream", () => {
    const filterRoot = (stream: string): string => {
      if (stream.startsWith("KV_")) return `$KV.${stream.slice(3)}.`;
      if (stream.startsWith("OBJ_")) return `$O.${stream.slice(4)}.`;
      const spec = StreamSpec[stream as Stream] as (typeof StreamSpec)[Stream] | undefined;
      assert.ok(spec, `a consumer on an unknown stream ${stream}`);
      return (spec.subjects[0] as string).replace(/>$/, "");
    };
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        for (const [who, p] of everyGrant(world, node)) {
          const allow = p.publish.allow ?? [];
          for (const entry of allow.filter((s) => s.startsWith("$JS.API.CONSUMER.CREATE."))) {
            const tokens = entry.split(".");
            const stream = tokens[4] as string;
            assert.ok(tokens.length >= 7 && tokens[5] === "*", `${who}: ${entry} has no filter`);
            assert.ok(tokens.slice(6).join(".").startsWith(filterRoot(stream)), `${who}: ${entry}`);
            assert.ok(
              allow.includes(`$JS.FC.${stream}.>`),
              `${who}: ${entry} without flow control`,
            );
          }
        }
      }),
    );
  });

  test("no grant hears another credential's inbox, even through a widened subscription", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        const grants = everyGrant(world, node);
        for (const [who, p] of grants) {
          for (const [other] of grants) {
            // A narrowed mcp credential has an inbox of its own: the full one hears none of it.
            if (other === who || other === "operator") continue;
            const theirs = `_INBOX.${node}.${other}.nuid.1`;
            // The server matches a subscription literally: `*` admits `>`, so ask both.
            const widened = ["_INBOX.>", `_INBOX.${node}.>`, `_INBOX.*.>`, `_INBOX.*.*.>`];
            const admitted = widened.filter((s) => isAllowed(p, "subscribe", s));
            const denied = (p.subscribe.deny ?? []).some((d) => subjectMatches(d, theirs));
            assert.ok(
              !isAllowed(p, "subscribe", theirs) && (admitted.length === 0 || denied),
              `${who} hears ${theirs} (admits ${admitted.join(", ")})`,
            );
          }
        }
      }),
    );
  });

  test("no grant a client can widen: no `*` where the client picks the key or filter", () => {
    fc.assert(
      fc.property(withNode(worldArb), ([world, node]) => {
        for (const [who, p] of everyGrant(world, node)) {
          for (const entry of p.publish.allow ?? []) {
            const tokens = entry.split(".");
            if (entry.startsWith("$JS.API.DIRECT.GET."))
              assert.ok(!tokens.slice(5).includes("*"), `${who}: ${entry}`);
            if (entry.startsWith("$JS.API.CONSUMER.CREATE."))
              assert.ok(!tokens.slice(6).includes("*"), `${who}: ${entry}`);
            // A leader's get carries the key in its body: only for a bucket the grant reads
            // whole (a module's own state, the config a host serves) does it widen nothing.
            if (entry.startsWith("$JS.API.STREAM.MSG.GET.KV_")) {
              const bucket = entry.slice("$JS.API.STREAM.MSG.GET.KV_".length);
              assert.ok(
                isAllowed(p, "publish", `$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.any-key`),
                `${who}: ${entry} reads any key of a bucket it does not read whole`,
              );
            }
            assert.ok(
              !/^\$JS\.API\.DIRECT\.GET\.[^.]+$/.test(entry),
              `${who}: ${entry} reads any revision`,
            );
          }
          assert.equal(isAllowed(p, "subscribe", "$SRV.>"), false, who);
        }
      }),
    );
  });
});
