import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ErrorCode, MeshError, inboxPrefix, type Permissions } from "@mesh/protocol";
import type { BusMessage, MeshBus } from "./mesh-bus.js";
import { flush } from "./publish.js";
import { PROMPT_MS, deadline } from "./testing/harness.js";
import { busSuite } from "./testing/fixtures.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

/** Its own inbox and its own notices subject; may publish only on the latter. */
function grant(node: string, module: string): Permissions {
  return {
    publish: { allow: [`test.${module}.>`] },
    subscribe: { allow: [`${inboxPrefix(node, module)}.>`, `test.${module}.>`] },
  };
}

const alpha = { user: "n1-alpha", password: "alpha-pw" };
const beta = { user: "n1-beta", password: "beta-pw" };

const fx = busSuite(
  {
    module: "controller",
    users: [
      { ...alpha, permissions: grant("n1", "alpha") },
      { ...beta, permissions: grant("n1", "beta") },
    ],
    setUp: async () => {
      bus = await fx.connect(alpha, { node: "n1", module: "alpha" });
    },
  },
  { before, after },
);
let bus: MeshBus;

async function next(iterator: AsyncIterator<BusMessage>, what: string): Promise<BusMessage> {
  const result = await deadline(iterator.next(), PROMPT_MS, what);
  assert.equal(result.done, false, `the subscription ended while waiting for ${what}`);
  return result.value;
}

describe("MeshBus.subscribe", () => {
  it("hands the messages on a granted subject with subject, data, reply and json()", async () => {
    const subscription = bus.subscribe("test.alpha.notices");
    try {
      await flush(bus);
      natsOf(fx.admin).nc.publish("test.alpha.notices", JSON.stringify({ hello: "alpha" }), {
        reply: "test.alpha.answers",
      });
      natsOf(fx.admin).nc.publish("test.alpha.notices", "not json");
      const first = await next(subscription, "the first message");
      assert.equal(first.subject, "test.alpha.notices");
      assert.equal(first.reply, "test.alpha.answers");
      assert.deepEqual(first.json(), { hello: "alpha" });
      const second = await next(subscription, "the second message");
      assert.equal(second.reply, undefined);
      assert.equal(new TextDecoder().decode(second.data), "not json");
      assert.throws(
        () => second.json(),
        (error: unknown) => error instanceof MeshError && error.code === ErrorCode.INVALID_VALUE,
      );
    } finally {
      await subscription.return(undefined);
    }
  });

  it("hands each message to one member of a queue group", async () => {
    const controller = new AbortController();
    const members = [1, 2].map(() =>
      bus.subscribe("test.alpha.work", { queue: "workers", signal: controller.signal }),
    );
    const witness = bus.subscribe("test.alpha.work", { signal: controller.signal });
    await flush(bus);
    natsOf(fx.admin).nc.publish("test.alpha.work", "job");
    await next(witness, "the witness's copy");
    // Whatever the server sent this connection for that message came before this PONG.
    await flush(bus);
    controller.abort();
    const received = await Promise.all(
      members.map(async (member) => {
        let count = 0;
        for await (const _ of member) count++;
        return count;
      }),
    );
    assert.deepEqual(received.sort(), [0, 1]);
  });

  it("throws PERMISSION_DENIED promptly for another credential's inbox", async () => {
    const subscription = bus.subscribe(`${inboxPrefix("n1", "beta")}.>`);
    await assert.rejects(
      deadline(subscription.next(), PROMPT_MS, "the subscription being refused"),
      hasCode(ErrorCode.PERMISSION_DENIED),
    );
  });

  it("throws PERMISSION_DENIED for a subject not granted, in a queue group too", async () => {
    const subscription = bus.subscribe("test.beta.work", { queue: "workers" });
    await assert.rejects(
      deadline(subscription.next(), PROMPT_MS, "the subscription being refused"),
      hasCode(ErrorCode.PERMISSION_DENIED),
    );
  });

  it("keeps the connection usable after a refusal", async () => {
    const refused = bus.subscribe(`${inboxPrefix("n1", "beta")}.>`);
    await assert.rejects(
      deadline(refused.next(), PROMPT_MS, "the refusal"),
      hasCode(ErrorCode.PERMISSION_DENIED),
    );
    assert.equal(bus.isClosed, false);
    const subscription = bus.subscribe("test.alpha.after");
    try {
      await flush(bus);
      natsOf(bus).nc.publish("test.alpha.after", JSON.stringify(1));
      assert.equal((await next(subscription, "a message after the refusal")).json(), 1);
    } finally {
      await subscription.return(undefined);
    }
  });

  it("ends the iteration when its signal aborts, also while it waits", async () => {
    const controller = new AbortController();
    const subscription = bus.subscribe("test.alpha.quiet", { signal: controller.signal });
    const waiting = subscription.next();
    controller.abort();
    assert.equal((await deadline(waiting, PROMPT_MS, "the subscription ending")).done, true);
  });

  it("hands nothing when its signal has already aborted", async () => {
    const subscription = bus.subscribe("test.alpha.quiet", { signal: AbortSignal.abort() });
    assert.equal((await deadline(subscription.next(), PROMPT_MS, "the end")).done, true);
  });
});
