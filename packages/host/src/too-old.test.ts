/**
 * Version skew (decision 0202): a host refuses a composition it cannot apply — one whose
 * `requires` names a feature it lacks, with a resource kind it does not know — keeps running what
 * it applied before, and says the condition `mesh-host/host-version-<node>` naming the version it
 * needs; a composition it can apply is taken again and the condition resolved. A host not started
 * by a launcher that is asked to run another host build says it cannot hand over.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { KvBucket, readStream } from "@mesh/bus";
import { fingerprintOf } from "@mesh/core";
import {
  Bucket,
  Condition,
  ErrorCode,
  HOST_MODULE,
  HOST_RESOURCE_ID,
  ObjectStore,
  Stream,
  artifactSource,
  conditionSubject,
  hostVersionCondition,
} from "@mesh/protocol";
import {
  LONG_RUNNING,
  bundleOf,
  busAndRoot,
  processResource,
  waitFor,
  withHost,
} from "./test-support.js";

const NODE = "v1";
const fx = busAndRoot([NODE]);

/** The condition the host said last under `name`, or undefined. */
async function lastCondition(name: string): Promise<Condition | undefined> {
  let last: Condition | undefined;
  for await (const event of readStream(fx.bus.admin, Stream.conditions, {
    filter: conditionSubject(HOST_MODULE, name),
    schema: Condition,
    deliver: "last-per-subject",
  })) {
    if (event.type === "current") break;
    if (event.type === "message") last = event.value;
  }
  return last;
}

test("a composition that needs a newer host is refused: what ran runs on, and the condition names the version", async () => {
  const { bus } = fx;
  const have = await KvBucket.open(bus.admin, Bucket.have);
  await withHost(bus, { node: NODE }, async (host, root) => {
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const app = processResource({ root, module: "app", name: "p", digest });
    await bus.compose(NODE, [app]);
    const pid = await waitFor("app running", () => host.processes().get(app.id)?.pid);

    // Written as a controller of a later version would: a resource kind this host does not know.
    const later = {
      node: NODE,
      resources: [app, { id: "app.gizmo-x", type: "gizmo", module: "app", spin: 3 }],
      requires: { features: ["gizmos"], version: "9.0.0" },
    };
    const composed = await KvBucket.openWith(bus.admin, Bucket.composed, z.unknown());
    await composed.put(NODE, { ...later, fingerprint: fingerprintOf(later) });
    const said = await waitFor("the host-version condition", async () => {
      const c = await lastCondition(hostVersionCondition(NODE));
      return c?.resolved !== true && c;
    });
    assert.match(said.message, /gizmos/);
    assert.match(said.message, /mesh 9\.0\.0/);
    assert.match(said.message, /HOST_TOO_OLD/);
    assert.equal(said.node, NODE);
    assert.equal(host.processes().get(app.id)?.pid, pid, "what ran runs on");
    assert.equal((await have.get(`${NODE}.app`))?.value.health !== "stopped", true);

    // A composition it can apply: taken, and the condition resolved.
    await bus.compose(NODE, [app]);
    await waitFor("the condition resolved", async () => {
      const c = await lastCondition(hostVersionCondition(NODE));
      return c?.resolved === true;
    });
    assert.equal(host.processes().get(app.id)?.pid, pid);
  });
});

test("a host not started by a launcher cannot run another host build, and says so", async () => {
  const { bus } = fx;
  const have = await KvBucket.open(bus.admin, Bucket.have);
  await withHost(bus, { node: NODE }, async () => {
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    await bus.compose(
      NODE,
      [
        {
          id: HOST_RESOURCE_ID,
          type: "host",
          module: HOST_MODULE,
          source: artifactSource(ObjectStore.artifacts, digest),
          digest,
          entry: "main.js",
        },
      ],
      { [HOST_MODULE]: { build: "1-host", config: {}, bound: {} } },
    );
    const failing = await waitFor("mesh-host failing", async () => {
      const now = (await have.get(`${NODE}.${HOST_MODULE}`))?.value;
      return now?.health === "failing" && now;
    });
    assert.equal(failing.lastErrorCode, ErrorCode.HOST_UPGRADE_FAILED);
    assert.equal(failing.build, "1-host");
    assert.match(failing.lastError ?? "", /not run by a launcher/);
  });
});
