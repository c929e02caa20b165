import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  AckPolicy,
  DeliverPolicy,
  jetstreamManager,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Svcm } from "@nats-io/services";
import { ErrorCode, MeshError, inboxPrefix, toolSubject, type Permissions } from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { request, serve, type Served } from "./services.js";
import { PROMPT_MS, deadline } from "./testing/harness.js";
import { busSuite } from "./testing/fixtures.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

const SERVICE = "alpha";
const echo = toolSubject("n1", "alpha", "echo");
const fail = toolSubject("n1", "alpha", "fail");
const quiet = toolSubject("n1", "alpha", "quiet");
const big = toolSubject("n1", "alpha", "big");

/**
 * Serves alpha's tools with `$SRV` discovery and may publish nothing but replies
 * (docs/nats.md §1.2 (d)).
 */
const serverGrant: Permissions = {
  publish: {},
  subscribe: {
    allow: [
      `${inboxPrefix("n1", "alpha")}.>`,
      "mesh.tools.n1.alpha.>",
      "$SRV.*",
      `$SRV.*.${SERVICE}`,
      `$SRV.*.${SERVICE}.*`,
    ],
  },
  allowResponses: true,
};

/** Calls alpha's tools (docs/nats.md §1.2 (e)). */
const caller: Permissions = {
  publish: { allow: ["mesh.tools.n1.alpha.>"] },
  subscribe: { allow: [`${inboxPrefix("n1", "beta")}.>`] },
};

const serverUser = { user: "n1-alpha", password: "alpha-pw" };
const callerUser = { user: "n1-beta", password: "beta-pw" };

const fx = busSuite(
  {
    module: "controller",
    users: [
      { ...serverUser, permissions: serverGrant },
      { ...callerUser, permissions: caller },
    ],
    tearDown: async () => {
      await served?.stop();
    },
    setUp: async () => {
      serving = await fx.connect(serverUser, { node: "n1", module: "alpha" });
      calling = await fx.connect(callerUser, { node: "n1", module: "beta" });
      served = await serve(serving, {
        name: SERVICE,
        version: "1.0.0",
        description: "alpha's tools",
        metadata: { module: "alpha" },
        endpoints: [
          {
            name: "echo",
            subject: echo,
            metadata: { schema: '{"type":"object"}' },
            handler: (request) => {
              handled.push(request.subject);
              return Promise.resolve({ echo: request.json() });
            },
          },
          {
            name: "fail",
            subject: fail,
            handler: (request) => {
              handled.push(request.subject);
              const { code, message } = request.json() as { code?: ErrorCode; message: string };
              if (code === undefined) throw new Error(message);
              throw new MeshError(code, message);
            },
          },
          {
            name: "big",
            subject: big,
            // Over the server's max_payload (1 MiB by default).
            handler: () => Promise.resolve("x".repeat(2 * 1024 * 1024)),
          },
          {
            name: "quiet",
            subject: quiet,
            handler: (request) => {
              handled.push(request.subject);
              return Promise.resolve(null);
            },
          },
        ],
        onRejected: (why, subject) => {
          rejected.push({ why, subject });
          onRejection?.();
        },
        onInternalError: (error) => internal.push(error),
      });
    },
  },
  { before, after },
);
let serving: MeshBus;
let calling: MeshBus;
let served: Served;

/** What the service saw, for the assertions. */
const handled: string[] = [];
const internal: unknown[] = [];
const rejected: Array<{ why: string; subject: string }> = [];
let onRejection: (() => void) | undefined;

/** Resolves at the next rejection the service reports. */
function nextRejection(): Promise<void> {
  return new Promise((resolve) => {
    onRejection = () => {
      onRejection = undefined;
      resolve();
    };
  });
}

describe("serve and request", () => {
  it("answers a request", async () => {
    assert.deepEqual(await request(calling, echo, { hello: "alpha" }), {
      echo: { hello: "alpha" },
    });
  });

  for (const code of [ErrorCode.INVALID_INPUT, ErrorCode.REFUSED, ErrorCode.NOT_FOUND]) {
    it(`hands a handler's ${code} to the caller as ${code}`, async () => {
      await assert.rejects(
        request(calling, fail, { code, message: `said ${code}` }),
        hasCode(code),
      );
    });
  }

  it("turns a handler's plain Error into INTERNAL, keeps its detail from the caller, and reports it", async () => {
    const before = internal.length;
    await assert.rejects(
      request(calling, fail, { message: "the database password is hunter2" }),
      (error: unknown) => {
        hasCode(ErrorCode.INTERNAL)(error);
        assert.doesNotMatch((error as Error).message, /hunter2/);
        return true;
      },
    );
    assert.equal(internal.length, before + 1);
    assert.match((internal.at(-1) as Error).message, /hunter2/);
  });

  it("turns a MeshError whose code is not a reply code into INTERNAL", async () => {
    await assert.rejects(
      request(calling, fail, { code: ErrorCode.CONFLICT, message: "lost a race" }),
      hasCode(ErrorCode.INTERNAL),
    );
  });

  it("answers a body that is not JSON with INVALID_INPUT when the handler reads it", async () => {
    const reply = await natsOf(calling).nc.request(fail, "{not json", { timeout: PROMPT_MS });
    assert.equal(reply.headers?.get("Mesh-Error-Code"), ErrorCode.INVALID_INPUT);
  });

  it("hands a refusal whose message has several lines to the caller", async () => {
    await assert.rejects(
      request(calling, fail, { code: ErrorCode.REFUSED, message: "first problem\nsecond problem" }),
      hasCode(ErrorCode.REFUSED),
    );
  });

  it("answers a reply too large to send with INTERNAL at once, and reports it", async () => {
    const before = internal.length;
    await assert.rejects(
      deadline(request(calling, big, {}), PROMPT_MS, "the reply"),
      hasCode(ErrorCode.INTERNAL),
    );
    assert.equal(internal.length, before + 1);
  });

  it("lists the service and its endpoints' metadata in $SRV discovery", async () => {
    const infos = await new Svcm(natsOf(fx.admin).nc).client().info(SERVICE);
    const infosList: unknown[] = [];
    for await (const info of infos) infosList.push(info);
    assert.equal(infosList.length, 1);
    const info = infosList[0] as {
      name: string;
      id: string;
      version: string;
      metadata: Record<string, string>;
      endpoints: Array<{ name: string; subject: string; metadata?: Record<string, string> }>;
    };
    assert.equal(info.name, SERVICE);
    assert.equal(info.id, served.id);
    assert.equal(info.version, "1.0.0");
    assert.equal(info.metadata.module, "alpha");
    const byName = new Map(info.endpoints.map((endpoint) => [endpoint.name, endpoint]));
    assert.equal(byName.get("echo")?.subject, echo);
    assert.deepEqual(byName.get("echo")?.metadata, { schema: '{"type":"object"}' });
    assert.deepEqual([...byName.keys()].sort(), ["big", "echo", "fail", "quiet"]);
  });
});

/**
 * A push consumer of `stream` delivering everything to `subject` in queue group "q", the group
 * the test's service serves in: what a forged delivery into an endpoint needs.
 */
async function deliverInto(jsm: JetStreamManager, stream: string, subject: string): Promise<void> {
  await jsm.consumers.add(stream, {
    deliver_subject: subject,
    deliver_group: "q",
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
  });
}

describe("a JetStream delivery into an endpoint's subject", () => {
  it("is rejected when it keeps another stream's subject, and the handler never runs", async () => {
    const jsm = await jetstreamManager(natsOf(fx.admin).nc);
    await jsm.streams.add({ name: "FORGED", subjects: ["forged.>"] });
    await natsOf(fx.admin).js.publish("forged.command", JSON.stringify({ hello: "from a stream" }));
    const before = handled.length;
    const rejection = nextRejection();
    // The service serves in queue group "q"; a consumer delivering to that group reaches it.
    await deliverInto(jsm, "FORGED", echo);
    await deadline(rejection, PROMPT_MS, "the delivery being rejected");
    assert.equal(rejected.at(-1)?.subject, "forged.command");
    assert.equal(handled.length, before);
  });

  it("is rejected when its subject is the endpoint's own (its reply is no inbox), and the handler never runs", async () => {
    const jsm = await jetstreamManager(natsOf(fx.admin).nc);
    // A stream that captures the endpoint's subject stores a message there.
    await jsm.streams.add({ name: "CAPTURED", subjects: [quiet] });
    const before = handled.length;
    // A message without a reply subject is no request either: rejected, and stored.
    let rejection = nextRejection();
    natsOf(fx.admin).nc.publish(quiet, JSON.stringify({ hello: "stored" }));
    await deadline(rejection, PROMPT_MS, "the message without a reply being rejected");
    assert.equal(rejected.at(-1)?.subject, quiet);
    // Then it lets go of the subject: the server refuses a consumer that delivers into its
    // own stream's subjects ("consumer deliver subject forms a cycle"), and rightly so: the
    // stream would store each delivery again (through a mirror, it loops for ever).
    await jsm.streams.update("CAPTURED", { subjects: ["captured.elsewhere"] });
    const count = rejected.length;
    rejection = nextRejection();
    await deliverInto(jsm, "CAPTURED", quiet);
    await deadline(rejection, PROMPT_MS, "the delivery being rejected");
    assert.equal(rejected.length, count + 1);
    assert.equal(rejected.at(-1)?.subject, quiet);
    assert.equal(handled.length, before);
  });
});
