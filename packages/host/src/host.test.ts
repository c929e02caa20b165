/**
 * The host against a real bus (its own least-privilege user), with real processes in temporary
 * roots: a composition applied from nothing, changed, emptied; failures reported; restarts.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, readdir, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { KvBucket, loadOrCreateNodeKeys, sha256 } from "@mesh/bus";
import { Bucket, ErrorCode, LogLine, logsSubject, type Have } from "@mesh/protocol";
import { flush } from "@mesh/bus";
import { chmod, writeFile } from "node:fs/promises";
import { HOST_VERSION, Host } from "./host.js";
import { isAlive } from "./proc.js";
import {
  FAST_HOST,
  LONG_RUNNING,
  archiveResource,
  bundleOf,
  processResource,
  rawTar,
  secretNeed,
  startBus,
  tempRoot,
  waitFor,
  withHost,
  type Bus,
} from "./test-support.js";

let bus: Bus;
before(async () => {
  bus = await startBus(["n1", "n2", "n3", "n4", "n5", "n6"]);
});
after(async () => {
  // Every test ran inside the host's own grant: the server saw no violation of it.
  const log = await readFile(bus.server.server.logPath, "utf8");
  const violations = log.split("\n").filter((l) => /Violation/.test(l));
  await bus.stop();
  assert.deepEqual(violations, []);
});

/** Each test has a node of its own, so no test sees another's composition or reports. */
function nodeHelpers(NODE: string) {
  return {
    NODE,
    haveOf: async (module: string): Promise<Have | undefined> => {
      const have = await KvBucket.open(bus.admin, Bucket.have);
      return (await have.get(`${NODE}.${module}`))?.value;
    },
    putComposed: async (
      resources: Parameters<Bus["compose"]>[1],
      modules?: Parameters<Bus["compose"]>[2],
    ) => {
      await bus.compose(NODE, resources, modules);
    },
  };
}

describe("the host", () => {
  test("applies a composition from nothing, restarts exactly what a changed digest names, and removes everything when emptied", async () => {
    const { NODE, haveOf, putComposed } = nodeHelpers("n1");
    await withHost(bus, { node: NODE }, async (host, root) => {
      // The key needs are sealed to, as the controller finds it: in the node's presence.
      const presence = await KvBucket.open(bus.admin, Bucket.presence);
      const publicKey = await waitFor(
        "presence",
        async () => (await presence.get(NODE))?.value.publicKey,
      );
      assert.equal(publicKey, (await loadOrCreateNodeKeys(join(root, "node.key"))).publicKey);
      const facts = (await presence.get(NODE))?.value.facts;
      assert.equal(facts?.os, process.platform);
      assert.equal(facts?.arch, process.arch);
      assert.equal(facts?.version, HOST_VERSION);
      assert.equal((await stat(join(root, "node.key"))).mode & 0o777, 0o600);
      const main = await bundleOf({ "main.js": LONG_RUNNING });
      const tools1 = await bundleOf({ "tools.js": "v1" });
      const mainDigest = (await bus.artifacts.put(main)).digest;
      const tools1Digest = (await bus.artifacts.put(tools1)).digest;
      const archive = archiveResource({
        root,
        module: "app",
        bundle: "tools",
        digest: tools1Digest,
      });
      const need = secretNeed({ root, module: "app", name: "token", publicKey, value: "s3cret" });
      const watcher = processResource({
        root,
        module: "app",
        name: "watcher",
        digest: mainDigest,
        restartOn: [archive.id],
      });
      const steady = processResource({ root, module: "app", name: "steady", digest: mainDigest });
      await putComposed([archive, need, watcher, steady]);

      const first = await waitFor("both processes", () => {
        const p = host.processes();
        return p.size === 2 ? p : undefined;
      });
      assert.equal(await readFile(join(archive.path, "tools.js"), "utf8"), "v1");
      assert.equal(await readFile(need.path, "utf8"), "s3cret");
      assert.equal((await stat(need.path)).mode & 0o777, 0o600);
      await waitFor("app healthy", async () => (await haveOf("app"))?.health === "healthy");
      // The bucket keeps what the host said before, for the assigner to find the last healthy build.
      const history = await (await KvBucket.open(bus.admin, Bucket.have)).history(`${NODE}.app`);
      const said = history.map((h) => h.value?.health);
      const starting = said.indexOf("starting");
      assert.ok(starting >= 0 && starting < said.lastIndexOf("healthy"), JSON.stringify(said));
      // Output reaches the local file.
      await waitFor("the log file", async () =>
        (await readFile(join(root, "logs", "app", "steady.log"), "utf8")).includes("started"),
      );

      // A new digest of the archive restarts the watcher only.
      const tools2Digest = (await bus.artifacts.put(await bundleOf({ "tools.js": "v2" }))).digest;
      const archive2 = archiveResource({
        root,
        module: "app",
        bundle: "tools",
        digest: tools2Digest,
      });
      await putComposed([archive2, need, watcher, steady]);
      await waitFor(
        "the new archive",
        async () => (await readFile(join(archive.path, "tools.js"), "utf8")) === "v2",
      );
      const second = await waitFor("the watcher restarted", () => {
        const p = host.processes();
        const w = p.get(watcher.id);
        return w !== undefined && w.pid !== first.get(watcher.id)?.pid ? p : undefined;
      });
      assert.deepEqual(second.get(steady.id), first.get(steady.id));
      await host.settled();
      // The old archive left the cache once the new one applied.
      assert.deepEqual(
        (await readdir(join(root, "cache"))).sort(),
        [`${mainDigest}.tgz`, `${tools2Digest}.tgz`].sort(),
      );
      assert.equal(await isAlive(first.get(watcher.id)!), false);

      // Emptied: everything stopped and removed.
      await putComposed([]);
      await waitFor("no process", () => host.processes().size === 0);
      await host.settled();
      for (const identity of second.values()) assert.equal(await isAlive(identity), false);
      await assert.rejects(stat(need.path));
      assert.deepEqual(await readdir(join(root, "bundles")), []);
      assert.deepEqual(await readdir(join(root, "cache")), []);
      await waitFor("app stopped", async () => (await haveOf("app"))?.health === "stopped");
    });
  });

  test("a new build is never reported with the health of the build whose processes still run", async () => {
    const { NODE, putComposed } = nodeHelpers("n6");
    // The old build's process takes its time to stop, as a real one finishing its work does:
    // reports go on meanwhile, while it is still the one running.
    const slowStop = `console.log("started"); process.on("SIGTERM", () => setTimeout(() => process.exit(0), 1500)); setInterval(() => {}, 1 << 30);`;
    const composedModule = (build: string) => ({ app: { build, config: {}, bound: {} } });
    const have = await KvBucket.open(bus.admin, Bucket.have);
    await withHost(bus, { node: NODE }, async (host, root) => {
      const v1 = (await bus.artifacts.put(await bundleOf({ "main.js": slowStop }))).digest;
      const p1 = processResource({ root, module: "app", name: "main", digest: v1 });
      await putComposed([p1], composedModule("1-aaaaaaaa"));
      await waitFor("build 1 healthy", async () => {
        const h = (await have.get(`${NODE}.app`))?.value;
        return h?.build === "1-aaaaaaaa" && h.health === "healthy";
      });
      const v2 = (await bus.artifacts.put(await bundleOf({ "main.js": `${slowStop}//2` }))).digest;
      const p2 = processResource({ root, module: "app", name: "main", digest: v2 });
      await putComposed([p2], composedModule("2-bbbbbbbb"));
      await waitFor("build 2 healthy", async () => {
        const h = (await have.get(`${NODE}.app`))?.value;
        return h?.build === "2-bbbbbbbb" && h.health === "healthy";
      });
      const said = (await have.history(`${NODE}.app`))
        .map((e) => e.value)
        .filter((v) => v?.build === "2-bbbbbbbb")
        .map((v) => v?.health);
      // Its own processes start first: it is starting before anything else is said of it.
      assert.equal(said[0], "starting", JSON.stringify(said));
    });
  });

  test("a wrong digest and a refused archive fail their module with the reason; other modules run on", async () => {
    const { NODE, haveOf, putComposed } = nodeHelpers("n2");
    await withHost(bus, { node: NODE }, async (host, root) => {
      const good = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
      const hostile = (
        await bus.artifacts.put(rawTar([{ name: "../../../escaped", type: "0", data: "x" }]))
      ).digest;
      const missing = sha256(Buffer.from("never stored"));
      // A file the host did not write stands where a need is to go: it is left as it is.
      const theirs = join(root, "secrets", "clash", "theirs.conf");
      await mkdir(join(root, "secrets", "clash"), { recursive: true });
      await writeFile(theirs, "the machine's own");
      // A need outside its module's secrets folder (a forged composition): never created there.
      const elsewhere = join(root, "..", `${basename(root)}-outside.conf`);
      const sealed = "v1.a.b.c.d";
      const outside = secretNeed({
        root,
        module: "outside",
        name: "conf",
        path: elsewhere,
        sealed,
      });
      const clash = secretNeed({ root, module: "clash", name: "conf", path: theirs, sealed });
      await putComposed([
        clash,
        outside,
        processResource({ root, module: "fine", name: "p", digest: good }),
        archiveResource({ root, module: "evil", bundle: "b", digest: hostile }),
        processResource({ root, module: "lost", name: "p", digest: missing }),
      ]);
      await waitFor("fine healthy", async () => (await haveOf("fine"))?.health === "healthy");
      const evil = await waitFor("evil failing", async () => {
        const h = await haveOf("evil");
        return h?.health === "failing" ? h : undefined;
      });
      assert.match(evil.lastError ?? "", /climbs out/);
      assert.equal(evil.lastErrorCode, ErrorCode.ARCHIVE_REFUSED);
      const lost = await waitFor("lost failing", async () => {
        const h = await haveOf("lost");
        return h?.health === "failing" ? h : undefined;
      });
      assert.match(lost.lastError ?? "", /not in mesh-artifacts/);
      const clashed = await waitFor("clash failing", async () => {
        const h = await haveOf("clash");
        return h?.health === "failing" ? h : undefined;
      });
      assert.match(clashed.lastError ?? "", /a file the host did not write/);
      assert.equal(await readFile(theirs, "utf8"), "the machine's own");
      const refusedOutside = await waitFor("outside failing", async () => {
        const h = await haveOf("outside");
        return h?.health === "failing" ? h : undefined;
      });
      assert.match(refusedOutside.lastError ?? "", /not inside outside's secrets folder/);
      await assert.rejects(stat(elsewhere));
      assert.deepEqual((await readdir(join(root, "bundles"))).sort(), ["fine"]);
      await assert.rejects(stat(join(root, "escaped")));
      assert.equal(host.processes().size, 1);
    });
  });

  test("a process that exits at once is restarted with growing delays and reported failing", async () => {
    const { NODE, haveOf, putComposed } = nodeHelpers("n3");
    const delays: number[] = [];
    await withHost(
      bus,
      {
        node: NODE,
        log: (line) => {
          const m = /restarting in (\d+) ms/.exec(line);
          if (m) delays.push(Number(m[1]));
        },
      },
      async (host, root) => {
        const crash = (await bus.artifacts.put(await bundleOf({ "main.js": "process.exit(3)" })))
          .digest;
        await putComposed([processResource({ root, module: "crashy", name: "p", digest: crash })]);
        const have = await waitFor("crashy failing", async () => {
          const h = await haveOf("crashy");
          return h?.health === "failing" ? h : undefined;
        });
        assert.match(have.lastError ?? "", /exited with code 3/);
        assert.equal(have.lastErrorCode, ErrorCode.PROCESS_EXITED);
        await waitFor("three delays", () => delays.length >= 3);
        // 100 ms doubling, less up to a fifth of jitter (the kit's DEFAULT_JITTER).
        for (const [i, base] of [100, 200, 400].entries()) {
          const d = delays[i] ?? -1;
          assert.ok(
            d >= base * 0.8 && d <= base,
            `delay ${i} is ${d}, not within [${base * 0.8}, ${base}]`,
          );
        }
        await waitFor(
          "restarts counted",
          async () => ((await haveOf("crashy"))?.restarts ?? 0) >= 2,
        );
      },
    );
  });

  test("output goes to the local file and to mesh.logs, lines cut and rate-bounded, the file rotated", async () => {
    const { NODE, putComposed } = nodeHelpers("n4");
    const listening = new AbortController();
    const lines = bus.admin.subscribe(logsSubject(NODE, "chatty"), { signal: listening.signal });
    const got: LogLine[] = [];
    const reading = (async () => {
      for await (const m of lines) got.push(LogLine.parse(m.json()));
    })();
    await withHost(
      bus,
      {
        node: NODE,
        tail: { maxLineChars: 100, linesPerSecond: 20, maxFileBytes: 8 * 1024 },
      },
      async (host, root) => {
        try {
          await flush(bus.admin);
          const script = [
            `console.log("hello");`,
            `console.error("oops");`,
            `console.log("x".repeat(5000));`,
            `for (let i = 0; i < 500; i++) console.log("flood " + i);`,
            LONG_RUNNING,
          ].join("\n");
          const digest = (await bus.artifacts.put(await bundleOf({ "main.js": script }))).digest;
          await putComposed([processResource({ root, module: "chatty", name: "talk", digest })]);
          await waitFor("the dropped notice", () =>
            got.some((l) => /line\(s\) dropped/.test(l.line)),
          );
          assert.ok(
            got.some((l) => l.line === "hello" && l.stream === "stdout" && l.process === "talk"),
          );
          assert.ok(got.some((l) => l.line === "oops" && l.stream === "stderr"));
          const long = got.find((l) => l.line.startsWith("xxx"));
          assert.ok(long !== undefined && long.line.length < 200, "the long line is cut");
          assert.ok(
            got.filter((l) => l.line.startsWith("flood")).length < 500,
            "the flood is bounded",
          );
          // More than 8 KiB were written: the file was rotated to .1.
          await waitFor("the rotated file", () =>
            stat(join(root, "logs", "chatty", "talk.log.1")).then(() => true),
          );
          assert.ok((await stat(join(root, "logs", "chatty", "talk.log"))).size < 8 * 1024);
        } finally {
          listening.abort();
          await reading;
        }
      },
    );
  });

  test("a process runs as its user, and its need file is that user's, 0600", async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip("only root may run processes as another user");
      return;
    }
    const { NODE, putComposed } = nodeHelpers("n5");
    const root = await tempRoot();
    await chmod(root, 0o755); // a temporary folder is 0700; a host's root is 0755
    await withHost(bus, { node: NODE, root }, async (host, root) => {
      const presence = await KvBucket.open(bus.admin, Bucket.presence);
      const publicKey = await waitFor(
        "presence",
        async () => (await presence.get(NODE))?.value.publicKey,
      );
      const path = join(root, "secrets", "lowly", "token");
      const need = secretNeed({
        root,
        module: "lowly",
        name: "token",
        user: "nobody",
        publicKey,
        value: "only-mine",
      });
      const script = `console.log(process.getuid(), require("node:fs").readFileSync(${JSON.stringify(path)}, "utf8"));\n${LONG_RUNNING}`;
      const digest = (await bus.artifacts.put(await bundleOf({ "main.cjs": script }))).digest;
      const p = {
        ...processResource({ root, module: "lowly", name: "p", digest, script: "main.cjs" }),
        user: "nobody",
      };
      await putComposed([need, p]);
      const info = await waitFor("the need file", () => stat(path));
      assert.equal(info.uid, 65534);
      assert.equal(info.mode & 0o777, 0o600);
      await waitFor("the process reading it as nobody", async () =>
        (await readFile(join(root, "logs", "lowly", "p.log"), "utf8")).includes("65534 only-mine"),
      );
    });
  });

  test("the host's states: running while it runs, stopped after, failed when it cannot start", async () => {
    const { NODE } = nodeHelpers("n1");
    const root = await tempRoot();
    try {
      const host = await Host.create({
        node: NODE,
        root,
        credential: bus.hostCredential(NODE),
        ...FAST_HOST,
      });
      assert.equal(host.state, "stopped");
      const running = host.run({ signal: new AbortController().signal });
      await waitFor("running", () => host.state === "running");
      await host.stop();
      await running;
      assert.equal(host.state, "stopped");

      // A root that cannot be made: a file stands where its folder would be.
      await writeFile(join(root, "taken"), "a file");
      // Host.create() does the set-up that can fail, so a host that cannot start is never made.
      await assert.rejects(
        Host.create({
          node: NODE,
          root: join(root, "taken", "root"),
          credential: bus.hostCredential(NODE),
          ...FAST_HOST,
        }),
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
