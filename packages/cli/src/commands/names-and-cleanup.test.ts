/**
 * Issue 14.8 (a module, config key or secret name the mesh does not know is refused with the
 * known ones and a did-you-mean, exit 3; `--force` prepares it anyway) and 14.9 (the verbs to
 * clean up: `mesh module remove`, `mesh secret list|unset`, `mesh assignments`). The built CLI
 * with the operator's grant against a real bus and a running controller.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KvBucket } from "@mesh/bus";
import { Bucket } from "@mesh/protocol";
import { startControllerMesh, type ControllerMesh } from "../testing/controller-mesh.js";
import { helloManifest, seedWanted } from "../testing/fixtures.js";
import { type MeshRun } from "../testing/run-mesh.js";

let mesh: ControllerMesh;

const mesh_ = (args: readonly string[], input?: string): Promise<MeshRun> =>
  mesh.run(args, input === undefined ? {} : { input });

const refusal = (run: MeshRun): { code: string; message: string } => {
  assert.equal(run.code, 3, `exit 3 expected: ${run.stdout}${run.stderr}`);
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
};

const ok = <T>(run: MeshRun): T => {
  assert.equal(run.code, 0, `${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as T;
};

before(async () => {
  mesh = await startControllerMesh();
  await mesh.register("hello");
  await mesh.register("counter");
  await seedWanted(
    mesh.put,
    helloManifest({
      config: { greeting: { default: "Hello" } },
      "own-secrets": { "api-token": { path: "api-token" }, broker: { path: "broker.json" } },
    }),
    { nodes: ["n1"], build: "1-a" },
  );
});

after(async () => {
  await mesh?.[Symbol.asyncDispose]();
});

describe("typos are refused with the known names and a did-you-mean (exit 3)", () => {
  test("mesh assign of a module that is not registered; --force assigns it anyway", async () => {
    const refused = refusal(await mesh_(["assign", "helo", "--all", "--json"]));
    assert.equal(refused.code, "REFUSED");
    assert.match(refused.message, /registered: counter, hello/);
    assert.match(refused.message, /did you mean "hello"\?/);
    const assignments = await KvBucket.open(mesh.admin, Bucket.assignments);
    assert.equal(await assignments.get("all.helo"), undefined, "nothing was assigned");
    const plain = await mesh_(["assign", "helo", "--all"]);
    assert.equal(plain.code, 3);
    assert.equal(
      plain.stderr,
      'mesh: no module "helo" — did you mean "hello"? (registered: counter, hello); name a registered module, register it first (`mesh module add <folder>`), or pass --force to assign it before it is registered [REFUSED]\n',
    );
    ok(await mesh_(["assign", "helo", "--all", "--force", "--json"]));
    assert.notEqual(await assignments.get("all.helo"), undefined);
    await assignments.delete("all.helo");
  });

  test("mesh config set of a module that is not registered; --force prepares the value", async () => {
    const refused = refusal(await mesh_(["config", "set", "helo", "greeting", "Hi", "--json"]));
    assert.match(refused.message, /did you mean "hello"\?/);
    assert.equal(
      await (await KvBucket.open(mesh.admin, Bucket.config)).get("helo.greeting"),
      undefined,
    );
    ok(await mesh_(["config", "set", "helo", "greeting", "Hi", "--force", "--json"]));
  });

  test("mesh secret set of a module that is not registered; --force keeps it for later", async () => {
    const refused = refusal(await mesh_(["secret", "set", "nosuchmod", "token", "--json"], "x"));
    assert.match(
      refused.message,
      /no module "nosuchmod" \(registered: counter, hello\); .* --force/,
    );
    const secrets = await KvBucket.open(mesh.admin, Bucket.secrets);
    assert.equal(await secrets.get("nosuchmod.token"), undefined);
    ok(await mesh_(["secret", "set", "nosuchmod", "token", "--force", "--json"], "x"));
    assert.notEqual(await secrets.get("nosuchmod.token"), undefined);
  });

  test("mesh secret set of a name the manifest does not declare; --force sets it anyway", async () => {
    const refused = refusal(await mesh_(["secret", "set", "hello", "api-tokn", "--json"], "x"));
    assert.match(refused.message, /declared in own-secrets of hello's manifest: api-token/);
    assert.match(refused.message, /did you mean "api-token"\?/);
    ok(await mesh_(["secret", "set", "hello", "api-token", "--json"], "t0ken"));
    ok(await mesh_(["secret", "set", "hello", "extra", "--force", "--json"], "x"));
  });
});

describe("verbs to clean up: module remove, secret list and unset, assignments", () => {
  test("secret list shows names, who and when, and what is declared but not set; never a value", async () => {
    ok(await mesh_(["secret", "set", "hello", "api-token", "--json"], "s3cret-value"));
    const run = await mesh_(["secret", "list", "hello", "--json"]);
    assert.ok(!run.stdout.includes("s3cret-value"));
    const listed = ok<{
      secrets: Array<{ name: string; by: string; at: string; declared: boolean | null }>;
      notSet: string[];
    }>(run);
    assert.deepEqual(
      listed.secrets.map((s) => [s.name, s.by, s.declared]),
      [
        ["api-token", "operator", true],
        ["extra", "operator", false],
      ],
    );
    assert.ok(listed.secrets.every((s) => !Number.isNaN(Date.parse(s.at))));
    assert.deepEqual(listed.notSet, []);
    const plain = await mesh_(["secret", "list", "hello"]);
    assert.match(plain.stdout, /extra\s+operator\s+\S+\s+not declared/);
  });

  test("secret unset removes a secret from the vault; a second unset says there was none", async () => {
    const done = ok<{ removed: boolean }>(
      await mesh_(["secret", "unset", "hello", "api-token", "--json"]),
    );
    assert.equal(done.removed, true);
    assert.equal(
      await (await KvBucket.open(mesh.admin, Bucket.secrets)).get("hello.api-token"),
      undefined,
    );
    const listed = ok<{ notSet: string[]; byTheMesh: string[] }>(
      await mesh_(["secret", "list", "hello", "--json"]),
    );
    // broker is the module's own bus credential: the mesh writes it, no one sets it.
    assert.deepEqual(listed.notSet, ["api-token"]);
    assert.deepEqual(listed.byTheMesh, ["broker"]);
    const text = await mesh_(["secret", "list", "hello"]);
    assert.match(text.stdout, /broker: the module's own bus credential, written by the mesh/);
    assert.doesNotMatch(text.stdout, /mesh secret set hello broker/);
    const again = await mesh_(["secret", "unset", "hello", "api-token"]);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /hello has no secret api-token; nothing to unset/);
  });

  test("assignments lists every assignment, narrowed by module and node", async () => {
    ok(await mesh_(["assign", "hello", "--all", "--json"]));
    ok(await mesh_(["assign", "counter", "--node", "n2", "--json"]));
    type Rows = { assignments: Array<{ module: string; node: string; by: string }> };
    const all = ok<Rows>(await mesh_(["assignments", "--json"]));
    assert.deepEqual(
      all.assignments.map((a) => [a.module, a.node, a.by]),
      [
        ["counter", "n2", "hub.operator"],
        ["hello", "all", "hub.operator"],
      ],
    );
    const onN1 = ok<Rows>(await mesh_(["assignments", "--node", "n1", "--json"]));
    assert.deepEqual(
      onN1.assignments.map((a) => a.module),
      ["hello"],
    );
    const plain = await mesh_(["assignments", "--module", "hello"]);
    assert.match(plain.stdout, /hello\s+every node\s+hub\.operator/);
  });

  test("module remove is refused while assigned; --unassign takes the assignments away first", async () => {
    const refused = refusal(await mesh_(["module", "remove", "counter", "--json"]));
    assert.match(refused.message, /counter is still assigned \(n2\.counter\)/);
    assert.match(refused.message, /--unassign/);
    const modules = await KvBucket.open(mesh.admin, Bucket.modules);
    assert.notEqual(await modules.get("counter"), undefined, "still registered");
    const removed = ok<{ unassigned: string[] }>(
      await mesh_(["module", "remove", "counter", "--unassign", "--json"]),
    );
    assert.deepEqual(removed.unassigned, ["n2.counter"]);
    assert.equal(await modules.get("counter"), undefined);
    const assignments = await KvBucket.open(mesh.admin, Bucket.assignments);
    assert.equal(await assignments.get("n2.counter"), undefined);
    const gone = refusal(await mesh_(["module", "remove", "countr", "--json"]));
    assert.match(gone.message, /registered: hello\);/);
    assert.doesNotMatch(gone.message, /--force/);
  });
});
