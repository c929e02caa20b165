import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { Credential } from "./credential.js";
import { BucketValue } from "./bucket-value.js";
import { Bucket } from "./layout.js";
import { ROLLOUT_SAMPLES, SUMMARY_SAMPLE } from "./test-support.js";
import {
  Answer,
  Ask,
  Build,
  Candidate,
  Composed,
  CompositionVerdict,
  Condition,
  Grant,
  Have,
  Health,
  JoinRequest,
  Keeps,
  LogLine,
  ModuleRegistration,
  Presence,
  ProvisionAsk,
  ProvisionChanged,
  Put,
  ToolDescription,
  Want,
} from "./values.js";

const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const at = "2025-01-02T03:04:05.000Z";
const build = "1-e3b0c442";
const fingerprint = Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, "0"))
  .join(":")
  .toUpperCase();

/** One good value per bucket; `satisfies` makes a new bucket without a sample a type error. */
const SAMPLE = {
  [Bucket.modules]: {
    module: "hello",
    source: { kind: "directory", path: "/src/hello" },
    by: "ada",
    at,
  },
  [Bucket.candidates]: { module: "hello", seq: 1, revision: digest, sourceDigest: digest, at },
  [Bucket.builds]: {
    module: "hello",
    build,
    status: "built",
    candidate: 1,
    manifestDigest: digest,
    bundles: [{ name: "tools", digest, size: 1024 }],
    log: "bundled 2 entrypoints",
    timings: { started: at, finished: at, ms: 1200 },
  },
  [Bucket.manifests]: {
    module: "hello",
    description: "says hello",
    bundles: [
      {
        name: "tools",
        language: "typescript",
        entrypoints: ["src/tools.ts"],
        loads: ["tools.js"],
        digest,
        size: 1024,
      },
    ],
    states: [{ name: "counts", readable: true }],
    reads: ["counter/counts"],
    calls: ["hello/greet"],
    config: { greeting: { description: "how to greet", default: "Hello" } },
    "own-secrets": { broker: { path: "broker.json" } },
  },
  [Bucket.assignments]: { by: "ada", at },
  [Bucket.presence]: {
    node: "edge-01",
    facts: { hostname: "edge-01", os: "linux", arch: "x64", version: "0.1.0" },
    publicKey: "MCowBQYDK2VuAyEA",
    heartbeat: at,
  },
  [Bucket.have]: { build, fingerprint: "f1", health: "healthy", since: at, restarts: 0 },
  [Bucket.puts]: { build, by: "ada", why: "hold while we look", at },
  [Bucket.retries]: { haveRevision: 12, by: "ada", why: "fixed the disk", at },
  [Bucket.asks]: {
    id: "a-1f2e3d4c",
    what: "hello 1-e3b0c442 reads counter/counts",
    module: "hello",
    build,
    nodes: ["edge-01"],
    at,
  },
  [Bucket.answers]: { answer: "yes", by: "ada", at },
  [Bucket.wants]: {
    build,
    manifestDigest: digest,
    fingerprint: "f1",
    rule: "newest",
    reason: "the build of the newest candidate",
  },
  [Bucket.compositions]: {
    node: "edge-01",
    verdict: "ok",
    wanted: { hello: build },
    reasons: [],
  },
  [Bucket.differences]: { want: build, composed: build, reasons: ["not yet reported"] },
  [Bucket.composed]: {
    node: "edge-01",
    resources: [
      {
        id: "hello.bundle-tools",
        type: "archive",
        module: "hello",
        source: `mesh-artifacts/${digest}`,
        digest,
        path: "/var/lib/mesh/bundles/hello/tools",
      },
      {
        id: "hello.need-broker",
        type: "need",
        kind: "credential",
        module: "hello",
        name: "broker",
        path: "/var/lib/mesh/needs/hello/broker.json",
      },
      {
        id: "node-tools.runtime",
        type: "process",
        name: "runtime",
        module: "node-tools",
        source: `mesh-artifacts/${digest}`,
        digest,
        path: "/var/lib/mesh/bundles/node-tools/runtime",
        run: ["node", "main.js"],
        env: { MESH_TOOL_MODULES: "hello=/var/lib/mesh/bundles/hello/tools/tools.js" },
        "restart-on": ["hello.bundle-tools"],
      },
    ],
    fingerprint: "f1",
  },
  [Bucket.grants]: {
    user: "edge-01.hello",
    node: "edge-01",
    module: "hello",
    permissions: {
      publish: { allow: ["mesh.conditions.hello.*"] },
      subscribe: { allow: ["_INBOX.edge-01.hello.>"] },
      allowResponses: true,
    },
    at,
  },
  [Bucket.config]: { value: { greeting: "Hi", times: 2 }, by: "ada", at },
  [Bucket.secrets]: {
    nonce: "bm9uY2U=",
    ciphertext: "Y2lwaGVy",
    tag: "dGFn",
    by: "controller",
    at,
  },
  [Bucket.summary]: SUMMARY_SAMPLE,
  ...ROLLOUT_SAMPLES,
  [Bucket.buildModules]: {
    language: "python",
    module: "mesh-build-python",
    version: "0.1.0",
    toolchain: "python3",
    started: at,
  },
} as const satisfies Record<Bucket, unknown>;

const CREDENTIAL = {
  servers: ["nats://127.0.0.1:4222"],
  user: "edge-01.hello",
  password: "secret",
  node: "edge-01",
  module: "hello",
  fingerprint,
};

/** One good value per message schema and the credential. */
const MESSAGES: ReadonlyArray<[string, z.ZodType, unknown]> = [
  [
    "Keeps",
    Keeps,
    { node: "edge-01", module: "hello", states: [{ name: "counts", readable: true }], at },
  ],
  [
    "Condition",
    Condition,
    {
      module: "hello",
      name: "set-back",
      level: "warning",
      message: "set back",
      node: "edge-01",
      at,
    },
  ],
  ["ProvisionAsk", ProvisionAsk, { module: "hello", kind: "config", key: "greeting" }],
  ["ProvisionChanged", ProvisionChanged, { module: "hello", kind: "bound" }],
  ["JoinRequest", JoinRequest, { token: "t0k3n", node: "edge-02", publicKey: "MCowBQYDK2VuAyEA" }],
  ["LogLine", LogLine, { process: "daemon", stream: "stderr", line: "", at }],
  [
    "ToolDescription",
    ToolDescription,
    { name: "greet", description: "says hello", input: { type: "object" } },
  ],
  ["Credential", Credential, CREDENTIAL],
  [
    "Credential (accounts mode: a signed user)",
    Credential,
    { ...withField(CREDENTIAL, "password", undefined), jwt: "a.b.c", seed: `SU${"A".repeat(56)}` },
  ],
];

/** The paths of a refused value's issues (every issue, not only the first). */
function refusedPaths(schema: z.ZodType, value: unknown): string[] {
  const result = schema.safeParse(value);
  assert.equal(result.success, false, `expected ${JSON.stringify(value)} to be refused`);
  return result.error.issues.map((issue) => issue.path.map(String).join("."));
}

describe("values: good samples", () => {
  for (const bucket of Object.values(Bucket)) {
    test(`a ${bucket} value parses`, () => {
      const result = BucketValue[bucket].safeParse(SAMPLE[bucket]);
      assert.ok(result.success, JSON.stringify(result.error?.issues));
    });
  }
  for (const [name, schema, value] of MESSAGES) {
    test(`a ${name} parses`, () => {
      const result = schema.safeParse(value);
      assert.ok(result.success, JSON.stringify(result.error?.issues));
    });
  }
});

describe("values: strict objects", () => {
  for (const bucket of Object.values(Bucket)) {
    test(`a ${bucket} value with an unknown field is refused`, () => {
      const result = BucketValue[bucket].safeParse({ ...SAMPLE[bucket], colour: "blue" });
      assert.equal(result.success, false);
      assert.deepEqual(
        result.error?.issues.map((i) => i.code),
        ["unrecognized_keys"],
      );
    });
  }
  for (const [name, schema, value] of MESSAGES) {
    test(`a ${name} with an unknown field is refused`, () => {
      assert.deepEqual(refusedPaths(schema, { ...(value as object), colour: "blue" }), [""]);
    });
  }
  test("nested objects are strict too", () => {
    const presence = SAMPLE[Bucket.presence];
    assert.deepEqual(
      refusedPaths(Presence, { ...presence, facts: { ...presence.facts, colour: "blue" } }),
      ["facts"],
    );
  });
});

/** A good value with one field changed or removed (undefined removes it). */
function withField<T extends object>(value: T, field: string, replacement: unknown): object {
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (replacement === undefined) delete copy[field];
  else copy[field] = replacement;
  return copy;
}

interface Bad {
  readonly what: string;
  readonly schema: z.ZodType;
  readonly value: unknown;
  readonly paths: readonly string[];
}

/**
 * Rows of a good sample with one field changed (undefined removes it), each refused at that field
 * unless its row names the path: `[what, field, replacement, path?]`.
 */
function fieldChanges(
  schema: z.ZodType,
  sample: object,
  rows: ReadonlyArray<readonly [string, string, unknown, string?]>,
): Bad[] {
  return rows.map(([what, field, replacement, path = field]) => ({
    what,
    schema,
    value: withField(sample, field, replacement),
    paths: [path],
  }));
}

const BAD: readonly Bad[] = [
  ...fieldChanges(Have, SAMPLE[Bucket.have], [
    ['a have with health "ok"', "health", "ok"],
    ["a have with negative restarts", "restarts", -1],
  ]),
  ...fieldChanges(Want, SAMPLE[Bucket.wants], [
    ["a want with an unknown rule", "rule", "oldest"],
    ["a want without a reason", "reason", undefined],
  ]),
  ...fieldChanges(Credential, CREDENTIAL, [
    ["a credential with a lowercase fingerprint", "fingerprint", fingerprint.toLowerCase()],
    [
      "a credential with a fingerprint without colons",
      "fingerprint",
      fingerprint.replaceAll(":", ""),
    ],
    ["a credential with neither a password nor a signed user", "password", undefined],
    ["a credential with no server", "servers", []],
    ["a credential with a bad module name", "module", "Hello"],
  ]),
  {
    what: "a signed credential without its seed",
    schema: Credential,
    value: { ...withField(CREDENTIAL, "password", undefined), jwt: "a.b.c" },
    paths: ["seed"],
  },
  {
    what: "a credential with both a password and a user JWT",
    schema: Credential,
    value: { ...CREDENTIAL, jwt: "a.b.c", seed: `SU${"A".repeat(56)}` },
    paths: ["password"],
  },
  ...fieldChanges(Candidate, SAMPLE[Bucket.candidates], [
    ["a candidate with seq 0", "seq", 0],
    ["a candidate with a fractional seq", "seq", 1.5],
  ]),
  ...fieldChanges(Build, SAMPLE[Bucket.builds], [
    ["a build with an unknown status", "status", "done"],
    [
      "a build whose bundle digest is uppercase",
      "bundles",
      [{ name: "tools", digest: digest.toUpperCase(), size: 1 }],
      "bundles.0.digest",
    ],
  ]),
  ...fieldChanges(ModuleRegistration, SAMPLE[Bucket.modules], [
    [
      "a registration with an unknown source kind",
      "source",
      { kind: "svn", url: "x" },
      "source.kind",
    ],
  ]),
  ...fieldChanges(Presence, SAMPLE[Bucket.presence], [
    ["a presence whose heartbeat is not ISO 8601", "heartbeat", "yesterday"],
    [
      "a presence whose heartbeat has an offset rather than Z",
      "heartbeat",
      "2025-01-02T05:04:05+02:00",
    ],
    // regression: node fields took any name, `all` included
    ['a presence of node "all"', "node", "all"],
  ]),
  {
    what: 'a join request from node "all"',
    schema: JoinRequest,
    value: { token: "t", node: "all", publicKey: "k" },
    paths: ["node"],
  },
  ...fieldChanges(Ask, SAMPLE[Bucket.asks], [
    // regression: an ask's id was any string, though askKey refuses most
    ["an ask whose id is not an ask id", "id", "Ask 1"],
    ['an ask about node "all"', "nodes", ["edge-01", "all"], "nodes.1"],
  ]),
  ...fieldChanges(Answer, SAMPLE[Bucket.answers], [['an answer "maybe"', "answer", "maybe"]]),
  ...fieldChanges(Put, SAMPLE[Bucket.puts], [
    ["a put of a malformed build id", "build", "Build_1"],
  ]),
  ...fieldChanges(CompositionVerdict, SAMPLE[Bucket.compositions], [
    ["a composition verdict other than ok or refused", "verdict", "maybe"],
  ]),
  ...fieldChanges(Composed, SAMPLE[Bucket.composed], [
    [
      "a composed resource of an unknown type",
      "resources",
      [{ id: "x.y", type: "file" }],
      "resources.0.type",
    ],
  ]),
  ...fieldChanges(Grant, SAMPLE[Bucket.grants], [
    [
      "a grant with an empty subject",
      "permissions",
      { publish: { deny: [">"] }, subscribe: { allow: [""] } },
      "permissions.subscribe.allow.0",
    ],
  ]),
  {
    what: "a condition with an unknown level",
    schema: Condition,
    value: { module: "hello", name: "x", level: "fatal", message: "m", at },
    paths: ["level"],
  },
  {
    what: "a provision ask of an unknown kind",
    schema: ProvisionAsk,
    value: { module: "hello", kind: "env", key: "x" },
    paths: ["kind"],
  },
  {
    what: "a changed message about secrets (never said)",
    schema: ProvisionChanged,
    value: { module: "hello", kind: "secret" },
    paths: ["kind"],
  },
  {
    what: "a tool description with a dotted name",
    schema: ToolDescription,
    value: { name: "greet.x", description: "", input: {} },
    paths: ["name"],
  },
];

describe("values: bad samples", () => {
  for (const { what, schema, value, paths } of BAD) {
    test(`${what} is refused at ${paths.join(", ")}`, () => {
      assert.deepEqual(refusedPaths(schema, value), paths);
    });
  }

  test("every issue is reported with its path, not only the first", () => {
    const have = { ...SAMPLE[Bucket.have], health: "ok", restarts: -1, since: "now" };
    assert.deepEqual(refusedPaths(Have, have).sort(), ["health", "restarts", "since"]);
  });

  test("a have's health is one of the four states, nothing else", () => {
    fc.assert(
      fc.property(fc.string(), (health) => {
        const ok = Have.safeParse({ ...SAMPLE[Bucket.have], health }).success;
        assert.equal(ok, (Health.options as readonly string[]).includes(health));
      }),
    );
  });
});
