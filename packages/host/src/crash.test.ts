/**
 * kill -9 of a host while it applies, then a new host on the same root: the machine ends with
 * exactly the composition's processes, one copy each, and nothing the first host started is
 * left behind. The hosts run as separate Node processes, as they do on a machine.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { KvBucket, writeCredential } from "@mesh/bus";
import { Bucket } from "@mesh/protocol";
import { HOST_PROCESS_MARKER } from "./host.js";
import { processesMarked, signalGroup } from "./proc.js";
import { LONG_RUNNING, bundleOf, busAndRoot, processResource, waitFor } from "./test-support.js";

const NODE = "k1";
const MAIN = join(fileURLToPath(new URL(".", import.meta.url)), "main.js");
const children: ChildProcess[] = [];

const fx = busAndRoot([NODE], {
  async ending() {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    // Every process a host started here, ended by its pid.
    for (const p of await marked()) await signalGroup(p, "SIGKILL");
  },
});

const marker = (): string =>
  createHash("sha256").update(resolve(fx.root)).digest("hex").slice(0, 16);
const marked = () => processesMarked(HOST_PROCESS_MARKER, `${marker()}:`);

function startHost(credentialFile: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "--node",
      NODE,
      "--root",
      fx.root,
      "--credential",
      credentialFile,
      "--healthy-ms",
      "300",
      "--poll-ms",
      "100",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  child.stderr?.resume();
  children.push(child);
  return child;
}

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((r) =>
    child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r()),
  );

test("a host killed with -9 while it applies, then started again, ends with one copy of each process and no orphan", async (t) => {
  const { bus, root } = fx;
  const credentialFile = join(root, "..", `${NODE}-${Date.now()}.credential.json`);
  await writeCredential(credentialFile, bus.hostCredential(NODE));
  try {
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const count = 12;
    const resources = Array.from({ length: count }, (_, i) =>
      processResource({ root, module: `m${String(i).padStart(2, "0")}`, name: "p", digest }),
    );
    await bus.compose(NODE, resources);

    const first = startHost(credentialFile);
    // The first process is up, the rest are being applied: now.
    await waitFor("the first host's first process", async () => (await marked()).length > 0);
    first.kill("SIGKILL");
    await exited(first);
    const left = await marked();
    assert.ok(left.length >= 1, "the killed host left processes running");
    t.diagnostic(`killed with ${left.length} of ${count} processes started`);

    const second = startHost(credentialFile);
    const final = await waitFor(
      "every process, once",
      async () => {
        const now = await marked();
        const ids = now.map((p) => p.value.slice(marker().length + 1)).sort();
        return ids.length === count && new Set(ids).size === count ? now : undefined;
      },
      60_000,
    );
    const have = await KvBucket.open(bus.admin, Bucket.have);
    await waitFor(
      "every module healthy",
      async () => {
        for (const r of resources)
          if ((await have.get(`${NODE}.${r.module}`))?.value.health !== "healthy") return false;
        return true;
      },
      60_000,
    );
    // Still exactly one of each once the second host settled; the first host's are adopted or ended.
    const settled = await marked();
    assert.equal(settled.length, count);
    assert.deepEqual(
      settled.map((p) => p.value).sort(),
      resources.map((r) => `${marker()}:${r.id}`).sort(),
    );
    for (const p of final) assert.ok(settled.some((s) => s.pid === p.pid));

    second.kill("SIGTERM");
    await exited(second);
    // A host that stops leaves its processes running, for the next one to adopt.
    assert.equal((await marked()).length, count);
  } finally {
    await rm(credentialFile, { force: true });
  }
});
