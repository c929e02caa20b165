import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  Condition,
  Stream,
  Subject,
  conditionSubject,
  type Credential,
  type Permissions,
} from "@mesh/protocol";
import { ensureLayout } from "./layout-setup.js";
import { MeshBus } from "./mesh-bus.js";
import { sayCondition } from "./say.js";
import { readStream, type StreamEvent } from "./stream-reader.js";
import { deadline, startTestServer, type TestServer } from "./testing/harness.js";
import { natsOf } from "./mesh-bus.js";

const WAIT_MS = 5_000;
const FILTER = `${Subject.conditionsPrefix}.>`;

/** Exactly what the operator's grant holds for the conditions stream (@mesh/core streamRead). */
const reader = {
  user: "reader",
  password: "reader-pw",
  permissions: {
    publish: {
      allow: [
        `$JS.API.CONSUMER.CREATE.${Stream.conditions}.*.${FILTER}`,
        `$JS.FC.${Stream.conditions}.>`,
      ],
    },
    // The operator speaks with the default inbox (decision 0070).
    subscribe: { allow: ["_INBOX.*", "_INBOX.*.*"], deny: ["_INBOX.*.*.>"] },
  } satisfies Permissions,
};

function credential(server: TestServer, who: { user: string; password: string }): Credential {
  return {
    servers: [server.url],
    user: who.user,
    password: who.password,
    node: "n1",
    module: who.user === reader.user ? "operator" : "controller",
  };
}

/** Takes events off a read until `until` says stop; the deadline turns a hang into TIMEOUT. */
async function take<T>(
  events: AsyncGenerator<StreamEvent<T>>,
  until: (seen: StreamEvent<T>[]) => boolean,
  what: string,
): Promise<StreamEvent<T>[]> {
  const seen: StreamEvent<T>[] = [];
  await deadline(
    (async () => {
      for (;;) {
        const next = await events.next();
        if (next.done === true) return;
        seen.push(next.value);
        if (until(seen)) return;
      }
    })(),
    WAIT_MS,
    what,
  );
  return seen;
}

describe("readStream", () => {
  let server: TestServer;
  let admin: MeshBus;
  let operator: MeshBus;

  before(async () => {
    server = await startTestServer({ users: [reader] });
    admin = await MeshBus.connect(credential(server, server.admin));
    await ensureLayout(admin);
    operator = await MeshBus.connect(credential(server, reader));
  });
  after(async () => {
    await operator?.close();
    await admin?.close();
    await server?.stop();
  });

  /** The conditions as the operator reads them: all that stands, or (`new`) only what comes. */
  const conditions = (options: { deliver?: "new"; signal?: AbortSignal } = {}) =>
    readStream(operator, Stream.conditions, { filter: FILTER, schema: Condition, ...options });

  it("hands the current marker at once for an empty stream, then a condition said later", async () => {
    const stop = new AbortController();
    const events = conditions({ signal: stop.signal });
    try {
      const first = await take(events, (s) => s.length === 1, "the current marker");
      assert.deepEqual(first, [{ type: "current" }]);
      await sayCondition(admin, {
        module: "hello",
        name: "started",
        level: "info",
        message: "hello started",
      });
      const [said] = await take(events, (s) => s.length === 1, "the condition said later");
      assert.equal(said?.type, "message");
      if (said?.type === "message") {
        assert.equal(said.subject, conditionSubject("hello", "started"));
        assert.equal(said.value.message, "hello started");
      }
    } finally {
      stop.abort();
    }
  });

  it("hands what the stream keeps (the last per subject) before the marker, as the operator's grant allows", async () => {
    for (const message of ["first", "second"]) {
      await sayCondition(admin, { module: "counter", name: "count", level: "warning", message });
    }
    await sayCondition(admin, { module: "board", name: "read", level: "error", message: "x" });
    const stop = new AbortController();
    const events = conditions({ signal: stop.signal });
    try {
      const seen = await take(events, (s) => s.at(-1)?.type === "current", "the standing ones");
      const messages = seen.flatMap((e) => (e.type === "message" ? [e.value] : []));
      const bySubject = new Map(messages.map((m) => [`${m.module}.${m.name}`, m.message]));
      // The stream keeps one message per subject: "first" was replaced by "second".
      assert.equal(bySubject.get("counter.count"), "second");
      assert.equal(bySubject.get("board.read"), "x");
      assert.equal(bySubject.has("hello.started"), true);
      assert.equal(seen.filter((e) => e.type === "current").length, 1);
    } finally {
      stop.abort();
    }
  });

  it("reports a message that is not a condition as invalid and carries on", async () => {
    const stop = new AbortController();
    const events = conditions({ deliver: "new", signal: stop.signal });
    try {
      await take(events, (s) => s.length === 1, "the current marker");
      await natsOf(admin).js.publish(conditionSubject("hello", "broken"), "not json");
      await sayCondition(admin, { module: "hello", name: "fine", level: "info", message: "ok" });
      const seen = await take(events, (s) => s.length === 2, "the invalid and the good one");
      assert.equal(seen[0]?.type, "invalid");
      assert.equal(seen[1]?.type, "message");
    } finally {
      stop.abort();
    }
  });

  it("ends when its signal aborts", async () => {
    const stop = new AbortController();
    const events = conditions({ deliver: "new", signal: stop.signal });
    await take(events, (s) => s.length === 1, "the current marker");
    const ended = events.next();
    stop.abort();
    const result = await deadline(ended, WAIT_MS, "the read to end after abort");
    assert.equal(result.done, true);
  });

  it("is left at once at the marker when nothing stands, and releases its consumer", async () => {
    // Nothing stood: the marker was handed before the read ever waited for a message. Leaving
    // then must not wait for one (it did: `mesh status` on a fresh mesh never returned).
    for (let round = 0; round < 3; round++) {
      const events = conditions({ deliver: "new" });
      await take(events, (s) => s.length === 1, "the current marker");
      const left = await deadline(events.return(undefined), WAIT_MS, "leaving the read");
      assert.equal(left.done, true);
    }
  });
});
