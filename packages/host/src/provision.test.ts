/**
 * The provisioner client on a real bus: what a module composed here may ask, what it may not,
 * the notice when a value moves, and a JetStream delivery dressed as an ask.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { KvBucket, MeshBus, flush, request, type BusMessage } from "@mesh/bus";
import { natsOf } from "@mesh/bus/internal";
import { deadline, forgeDelivery, publishRaw } from "@mesh/bus/testing";
import {
  Bucket,
  ErrorCode,
  isMeshError,
  Manifest,
  provisionChangedSubject,
  provisionModuleChangedSubject,
  provisionModuleSubject,
  provisionSubject,
  type ComposedModule,
} from "@mesh/protocol";
import { fingerprintOf, moduleGrant } from "@mesh/core";
import { Host } from "./host.js";
import {
  LONG_RUNNING,
  bundleOf,
  busAndRoot,
  credentialFor,
  loggingHost,
  processResource,
  waitFor,
  type Bus,
} from "./test-support.js";

const NODE = "p1";
let host: Host;
let running: Promise<void>;
const logged: string[] = [];
let resources: Parameters<Bus["compose"]>[1];

const app: ComposedModule = {
  build: "b1",
  config: { greeting: { default: "hello" }, color: {} },
  bound: { "state.notes": "app_notes", "call.other.echo": "mesh.tools.*.other.echo" },
};

/** app's own process: the grant the broker gives a module that declares its credential. */
const APP_PASSWORD = "app-password";
const appGrant = moduleGrant({
  node: NODE,
  manifest: Manifest.parse({ module: "app", config: { greeting: { default: "hello" } } }),
  owners: {},
}).permissions;

const fx = busAndRoot([NODE], {
  users: [{ user: "app-p1", password: APP_PASSWORD, permissions: appGrant }],
  async starting() {
    const { bus, root } = fx;
    await startHost();
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    resources = [
      processResource({ root, module: "app", name: "follows", digest, restartOn: ["config"] }),
      processResource({ root, module: "app", name: "ignores", digest }),
    ];
    await bus.compose(NODE, resources, { app });
    await waitFor("both processes", () => host.processes().size === 2);
  },
  async ending() {
    await host.stop();
    await running;
  },
});

/** Starts the host on the root (again: it carries on from what it kept there). */
async function startHost(): Promise<void> {
  host = await Host.create({
    node: NODE,
    root: fx.root,
    credential: fx.bus.hostCredential(NODE),
    ...loggingHost(logged),
  });
  running = host.run({ signal: new AbortController().signal });
}

const ask = (body: unknown) =>
  request(fx.bus.admin, provisionSubject(NODE), body, { timeoutMs: 10_000 });

async function setConfig(key: string, value: unknown): Promise<void> {
  const config = await KvBucket.open(fx.bus.admin, Bucket.config);
  await config.put(key, { value: value as never, by: "ada", at: new Date().toISOString() });
}

async function refusedWith(body: unknown, code: string): Promise<string> {
  let message = "";
  await assert.rejects(ask(body), (e: unknown) => {
    message = (e as Error).message;
    return isMeshError(e) && e.code === code;
  });
  return message;
}

describe("provision asks", () => {
  test("config: the default, then the mesh-wide value, then this node's; another node's is ignored", async () => {
    assert.deepEqual(await ask({ module: "app", kind: "config", key: "greeting" }), {
      value: "hello",
    });
    const greeting = async () =>
      ((await ask({ module: "app", kind: "config", key: "greeting" })) as { value: unknown }).value;
    await setConfig("app.greeting", "hi");
    await waitFor("the mesh-wide value", async () => (await greeting()) === "hi");
    await setConfig(`app.greeting.${NODE}`, "hey");
    await setConfig("app.greeting.elsewhere", "not here");
    await waitFor("the node's value", async () => (await greeting()) === "hey");
  });

  test("config: a declared key without a value is NOT_FOUND; an undeclared key is REFUSED", async () => {
    await refusedWith({ module: "app", kind: "config", key: "color" }, ErrorCode.NOT_FOUND);
    assert.match(
      await refusedWith({ module: "app", kind: "config", key: "password" }, ErrorCode.REFUSED),
      /declares no config key "password"/,
    );
  });

  test("the host watches only the mesh-wide config keys and its own node's, never another node's", async () => {
    // What the server delivers is bounded by each consumer's filter: read them off the stream.
    const jsm = await natsOf(fx.bus.admin).js.jetstreamManager();
    const filters: string[] = [];
    await waitFor("the host's two config watches", async () => {
      filters.length = 0;
      for await (const c of jsm.consumers.list("KV_mesh-config"))
        filters.push(c.config.filter_subject ?? "(every key)");
      return filters.length === 2;
    });
    assert.deepEqual(filters.sort(), [`$KV.mesh-config.*.*`, `$KV.mesh-config.*.*.${NODE}`]);
    // Another node's value is not handed at all; this node's still is.
    await setConfig("app.color.elsewhere", "red");
    await setConfig(`app.color.${NODE}`, "blue");
    await waitFor(
      "this node's value",
      async () =>
        ((await ask({ module: "app", kind: "config", key: "color" })) as { value: unknown })
          .value === "blue",
    );
    // Gone again, as the tests after this one expect.
    await (await KvBucket.open(fx.bus.admin, Bucket.config)).delete(`app.color.${NODE}`);
    await waitFor("this node's value gone", async () =>
      ask({ module: "app", kind: "config", key: "color" }).then(
        () => false,
        (e: unknown) => isMeshError(e, ErrorCode.NOT_FOUND),
      ),
    );
  });

  test("bound: the composition's values, the node and the bus urls", async () => {
    assert.deepEqual(await ask({ module: "app", kind: "bound", key: "state.notes" }), {
      value: "app_notes",
    });
    assert.deepEqual(await ask({ module: "app", kind: "bound", key: "call.other.echo" }), {
      value: "mesh.tools.*.other.echo",
    });
    assert.deepEqual(await ask({ module: "app", kind: "bound", key: "node" }), { value: NODE });
    assert.deepEqual(await ask({ module: "app", kind: "bound", key: "servers" }), {
      value: [fx.bus.server.url],
    });
    await refusedWith({ module: "app", kind: "bound", key: "nothing" }, ErrorCode.NOT_FOUND);
  });

  test("a secret is refused with the reason; so is a module not on this node, and a malformed ask", async () => {
    assert.match(
      await refusedWith({ module: "app", kind: "secret", key: "token" }, ErrorCode.REFUSED),
      /as files/,
    );
    assert.match(
      await refusedWith({ module: "stranger", kind: "config", key: "greeting" }, ErrorCode.REFUSED),
      /not composed on p1/,
    );
    await refusedWith({ module: "app", kind: "everything" }, ErrorCode.INVALID_INPUT);
  });

  test("an operator's value says changed, and restarts exactly the process that restarts on config", async () => {
    // The test before leaves app's config as it found it, and the host may still be restarting
    // app.process-follows for that: its pid is only the one to compare with once that is done.
    await host.settled();
    const before = host.processes();
    const notices = fx.bus.admin.subscribe(provisionChangedSubject(NODE));
    const first = notices.next();
    await flush(fx.bus.admin);
    await setConfig("app.color", "blue");
    const notice: IteratorResult<BusMessage> = await deadline(first, 10_000, "the change notice");
    assert.ok(notice.done !== true);
    assert.deepEqual(notice.value.json(), { module: "app", kind: "config", key: "color" });
    await notices.return(undefined);
    const after = await waitFor("follows restarted", () => {
      const now = host.processes();
      const f = now.get("app.process-follows");
      return f !== undefined && f.pid !== before.get("app.process-follows")?.pid ? now : undefined;
    });
    assert.deepEqual(after.get("app.process-ignores"), before.get("app.process-ignores"));
  });

  test("have says which config value the module sees (its fingerprint) and since when: a config rollout's gate (decision 0131)", async () => {
    const have = await KvBucket.open(fx.bus.admin, Bucket.have);
    const reported = async () => (await have.get(`${NODE}.app`))?.value.config;
    await setConfig(`app.color.${NODE}`, "teal");
    await waitFor("the value in have", async () => {
      return (await reported())?.values["color"] === fingerprintOf("teal");
    });
    const first = await reported();
    assert.ok(first !== undefined);
    assert.ok(Object.hasOwn(first.values, "greeting"), "every declared key with a value");
    await setConfig(`app.color.${NODE}`, "plum");
    await waitFor("the new value in have", async () => {
      return (await reported())?.values["color"] === fingerprintOf("plum");
    });
    const second = await reported();
    assert.ok(Date.parse(second?.since ?? "") >= Date.parse(first.since), "since moved with it");
    assert.notEqual(second?.values["color"], first.values["color"]);
    // The node's value goes again, and the change is through before the next test listens.
    await (await KvBucket.open(fx.bus.admin, Bucket.config)).delete(`app.color.${NODE}`);
    await waitFor("the value gone from have", async () => {
      return (await reported())?.values["color"] !== fingerprintOf("plum");
    });
  });

  test("a composition that moves a bound value says changed for it; the module's build is reported", async () => {
    const notices = fx.bus.admin.subscribe(provisionChangedSubject(NODE));
    const first = notices.next();
    const second = first.then(() => notices.next());
    await flush(fx.bus.admin);
    const moved: ComposedModule = {
      ...app,
      build: "b2",
      bound: { ...app.bound, "state.notes": "app_notes2" },
    };
    await fx.bus.compose(NODE, resources, { app: moved });
    // Two bound values moved: the state's bucket, and the build (which the runtime reports).
    const said: unknown[] = [];
    for (const next of [first, second]) {
      const notice: IteratorResult<BusMessage> = await deadline(next, 10_000, "a change notice");
      assert.ok(notice.done !== true);
      said.push(notice.value.json());
    }
    assert.deepEqual(
      said.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        { module: "app", kind: "bound", key: "build" },
        { module: "app", kind: "bound", key: "state.notes" },
      ],
    );
    await notices.return(undefined);
    assert.deepEqual(await ask({ module: "app", kind: "bound", key: "state.notes" }), {
      value: "app_notes2",
    });
    const have = await KvBucket.open(fx.bus.admin, Bucket.have);
    await waitFor(
      "build b2 reported",
      async () => (await have.get(`${NODE}.app`))?.value.build === "b2",
    );
  });

  test("an ask that arrives as a JetStream delivery is rejected before it is answered", async () => {
    // Whoever may create a consumer can have JetStream deliver into any subject with an exact
    // subscriber (docs/nats.md §1.4.3): here a stored config entry, into the provision subject.
    await setConfig("app.forged", { module: "app", kind: "config", key: "greeting" });
    await forgeDelivery(fx.bus.admin, {
      stream: "KV_mesh-config",
      filter: "$KV.mesh-config.app.forged",
      into: provisionSubject(NODE),
    });
    const line = await waitFor("the rejection", () =>
      logged.find((l) => l.startsWith("rejected a provision ask")),
    );
    assert.match(line, /\$KV\.mesh-config\.app\.forged/);
  });

  test("a module's own process asks as itself on its own subject, hears its own changes, and cannot ask as another", async () => {
    await using app = await MeshBus.connect(
      credentialFor(
        fx.bus.server,
        { user: "app-p1", password: APP_PASSWORD },
        { node: NODE, module: "app" },
      ),
    );
    const own = provisionModuleSubject(NODE, "app");
    const asked = (await request(app, own, { kind: "config", key: "greeting" })) as {
      value: unknown;
    };
    const heard: BusMessage[] = [];
    const stop = new AbortController();
    void (async () => {
      for await (const m of app.subscribe(provisionModuleChangedSubject(NODE, "app"), {
        signal: stop.signal,
      }))
        heard.push(m);
    })();
    await flush(app);
    await setConfig(`app.greeting.${NODE}`, "moved for the process");
    await waitFor("app's own change notice", () => heard.length > 0);
    assert.deepEqual(heard[0]?.json(), { module: "app", kind: "config", key: "greeting" });
    assert.deepEqual(await request(app, own, { kind: "config", key: "greeting" }), {
      value: "moved for the process",
    });
    assert.ok(asked.value !== undefined);
    // The module is the subject's: a body naming another module is not an ask of this shape.
    await assert.rejects(
      request(app, own, { module: "other", kind: "config", key: "greeting" }),
      (e: unknown) => isMeshError(e) && e.code === ErrorCode.INVALID_INPUT,
    );
    // Another module's subject is refused by the bus itself.
    await assert.rejects(
      request(app, provisionModuleSubject(NODE, "other"), { kind: "config", key: "greeting" }),
      (e: unknown) => isMeshError(e) && e.code === ErrorCode.PERMISSION_DENIED,
    );
    stop.abort();
  });

  test("a config value deleted while the host was stopped is gone once it is back; an invalid one is ignored", async () => {
    const answer = async (key: string) =>
      ((await ask({ module: "app", kind: "config", key })) as { value: unknown }).value;
    await setConfig(`app.greeting.${NODE}`, "before the stop");
    await waitFor("the node's value", async () => (await answer("greeting")) === "before the stop");
    await host.stop();
    await running;
    const config = await KvBucket.open(fx.bus.admin, Bucket.config);
    await config.delete(`app.greeting.${NODE}`);
    await setConfig("app.greeting", "mesh-wide");
    await startHost();
    await waitFor("the mesh-wide value", async () => (await answer("greeting")) === "mesh-wide");

    // A value that breaks the schema leaves the key as it was; the next good one still comes.
    await publishRaw(fx.bus.admin, `$KV.${Bucket.config}.app.greeting`, "not json");
    await setConfig("app.color", "red");
    await waitFor("the next value", async () => (await answer("color")) === "red");
    assert.equal(await answer("greeting"), "mesh-wide");
    assert.ok(logged.some((l) => l.startsWith("ignored an invalid config value for app.greeting")));
  });
});
