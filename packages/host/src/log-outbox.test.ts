/**
 * What a process says while no host reads it reaches `mesh.logs`, not only its file (issue 14.6:
 * the runtime logs an ask nothing answered while its host was away; the operator reads it with
 * `mesh logs`). The next host reads the waiting output before it has the bus, and sends it once
 * it does.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flush } from "@mesh/bus";
import { LogLine, logsSubject } from "@mesh/protocol";
import { Host } from "./host.js";
import { LogOutbox } from "./log-outbox.js";
import { isAlive } from "./proc.js";
import { FAST_HOST, bundleOf, busAndRoot, processResource, waitFor } from "./test-support.js";

const NODE = "lo1";

const line = (text: string): LogLine => ({
  process: "p",
  stream: "stderr",
  line: text,
  at: "2026-01-01T00:00:00.000Z",
});

describe("the lines kept while there is no bus", () => {
  test("are handed oldest first, once; beyond the bound the oldest are dropped and counted", () => {
    const outbox = new LogOutbox(3);
    for (const text of ["a", "b", "c", "d", "e"]) outbox.hold("m", line(text));
    const sent: string[] = [];
    assert.equal(
      outbox.drain((module, l) => sent.push(`${module}:${l.line}`)),
      2,
    );
    assert.deepEqual(sent, ["m:c", "m:d", "m:e"]);
    assert.equal(outbox.size, 0);
    assert.equal(
      outbox.drain(() => assert.fail("nothing is left")),
      0,
    );
  });
});

describe("output a process wrote while no host ran", () => {
  const fx = busAndRoot([NODE]);

  test("reaches mesh.logs once the next host, which adopts the process, has the bus", async () => {
    const { bus, root } = fx;
    const options = { ...FAST_HOST, node: NODE, root, credential: bus.hostCredential(NODE) };
    // Writes a line each time it is told to (SIGUSR2), so the test says when.
    const script = `process.on("SIGUSR2", () => console.error("said while no host read " + Date.now())); console.log("started"); setInterval(() => {}, 1 << 30);`;
    const first = await Host.create(options);
    const firstRun = first.run({ signal: new AbortController().signal });
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": script }))).digest;
    const p = processResource({ root, module: "talker", name: "p", digest });
    const listening = new AbortController();
    const got: LogLine[] = [];
    const lines = bus.admin.subscribe(logsSubject(NODE, "talker"), { signal: listening.signal });
    const reading = (async () => {
      for await (const m of lines) got.push(LogLine.parse(m.json()));
    })();
    await flush(bus.admin);
    let identity;
    try {
      await bus.compose(NODE, [p]);
      identity = await waitFor("the process", () => first.processes().get(p.id), 60_000);
      // It said "started" once its SIGUSR2 handler was set: before, the signal would end it.
      await waitFor("the process started", () => got.some((l) => l.line === "started"), 60_000);
    } finally {
      // Stopped without stopping its processes, as a host being restarted is.
      await first.stop();
      await firstRun;
    }
    assert.ok(await isAlive(identity), "the process outlives its host");
    process.kill(identity.pid, "SIGUSR2");
    const second = await Host.create({ ...options, stopProcessesOnStop: true });
    const secondRun = second.run({ signal: new AbortController().signal });
    try {
      await waitFor(
        "the line said while no host ran, on mesh.logs",
        () => got.some((l) => l.line.startsWith("said while no host read")),
        60_000,
      );
      assert.deepEqual(second.processes().get(p.id), identity, "adopted, not restarted");
    } finally {
      listening.abort();
      await reading;
      await second.stop();
      await secondRun;
    }
  });
});
