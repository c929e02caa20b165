import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import {
  Condition,
  ErrorCode,
  Keeps,
  Stream,
  conditionSubject,
  inboxPrefix,
  keepsSubject,
  moduleConditionsWildcard,
  type Permissions,
} from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { sayCondition, sayKeeps } from "./say.js";
import { PROMPT_MS, deadline } from "./testing/harness.js";
import { busSuite } from "./testing/fixtures.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

/** A module's process: its inbox, its own conditions, what its process keeps. */
const alphaGrant: Permissions = {
  publish: { allow: [moduleConditionsWildcard("alpha"), keepsSubject("n1", "alpha")] },
  subscribe: { allow: [`${inboxPrefix("n1", "alpha")}.>`] },
};

const alpha = { user: "n1-alpha", password: "alpha-pw" };

const fx = busSuite(
  {
    module: "controller",
    layout: true,
    users: [{ ...alpha, permissions: alphaGrant }],
    setUp: async () => {
      jsm = await jetstreamManager(natsOf(fx.admin).nc);
      bus = await fx.connect(alpha, { node: "n1", module: "alpha" });
    },
  },
  { before, after },
);
let bus: MeshBus;
let jsm: JetStreamManager;

/** How many messages the stream keeps on subjects under `filter`. */
async function kept(stream: string, filter: string): Promise<number> {
  const info = await jsm.streams.info(stream, { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
}

async function last(stream: string, subject: string): Promise<unknown> {
  const message = await jsm.streams.getMessage(stream, { last_by_subj: subject });
  assert.ok(message !== null, `nothing kept on ${subject}`);
  return message.json();
}

describe("sayCondition", () => {
  it("keeps the last condition per module and name in mesh-conditions", async () => {
    await sayCondition(bus, { name: "disk", level: "warning", message: "90% full" });
    const later = await sayCondition(bus, { name: "disk", level: "error", message: "99% full" });
    await sayCondition(bus, { name: "memory", level: "info", message: "fine" });
    assert.equal(await kept(Stream.conditions, "mesh.conditions.alpha.>"), 2);
    const disk = Condition.parse(await last(Stream.conditions, conditionSubject("alpha", "disk")));
    assert.deepEqual(disk, later);
    assert.equal(disk.level, "error");
    assert.equal(disk.module, "alpha");
  });

  it("a resolved condition replaces the open one of the same module and name", async () => {
    await sayCondition(bus, { name: "queue", level: "error", message: "the queue is stuck" });
    const resolved = await sayCondition(bus, {
      name: "queue",
      level: "info",
      message: "the queue moves again",
      resolved: true,
    });
    assert.equal(await kept(Stream.conditions, conditionSubject("alpha", "queue")), 1);
    const queue = Condition.parse(
      await last(Stream.conditions, conditionSubject("alpha", "queue")),
    );
    assert.deepEqual(queue, resolved);
    assert.equal(queue.resolved, true);
  });

  it("is refused for another module with PERMISSION_DENIED, promptly, and nothing is kept", async () => {
    await assert.rejects(
      deadline(
        sayCondition(bus, { module: "beta", name: "disk", level: "error", message: "forged" }),
        PROMPT_MS,
        "the condition being refused",
      ),
      hasCode(ErrorCode.PERMISSION_DENIED),
    );
    assert.equal(await kept(Stream.conditions, "mesh.conditions.beta.>"), 0);
  });

  it("refuses a condition that is not well-formed with INVALID_VALUE", async () => {
    await assert.rejects(
      sayCondition(bus, { name: "Not A Name", level: "info", message: "x" }),
      hasCode(ErrorCode.INVALID_VALUE),
    );
  });
});

describe("sayKeeps", () => {
  it("keeps the last word of each process in mesh-keeps", async () => {
    await sayKeeps(bus, [{ name: "cache", readable: false }]);
    await sayKeeps(bus, [
      { name: "notes", readable: true },
      { name: "cache", readable: false },
    ]);
    assert.equal(await kept(Stream.keeps, "mesh.keeps.>"), 1);
    const keeps = Keeps.parse(await last(Stream.keeps, keepsSubject("n1", "alpha")));
    assert.equal(keeps.node, "n1");
    assert.equal(keeps.module, "alpha");
    // Sorted by name, so the same states always read the same.
    assert.deepEqual(keeps.states, [
      { name: "cache", readable: false },
      { name: "notes", readable: true },
    ]);
  });

  it("refuses a state that is not well-formed with INVALID_VALUE", async () => {
    await assert.rejects(
      sayKeeps(bus, [{ name: "Not A Name", readable: true }]),
      hasCode(ErrorCode.INVALID_VALUE),
    );
  });
});
