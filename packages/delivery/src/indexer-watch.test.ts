/**
 * Edits stop being noticed (issue 14.7): a folder's watcher must keep seeing any number of edits
 * under `src/`, files renamed over (what editors do), folders made later, and fall back to a
 * periodic digest, saying so, when the system refuses to watch more.
 */
import assert from "node:assert/strict";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KvBucket } from "@mesh/bus";
import { deadline, firstPut } from "@mesh/bus/testing";
import { Bucket, candidateKey, type Candidate } from "@mesh/protocol";
import { Indexer } from "./indexer.js";
import { registerModule } from "./register.js";
import { startDeliveryBus, tempFolder, toolsManifest, type DeliveryBus } from "./test-support.js";

let bus: DeliveryBus;
let indexer: Indexer;
let candidates: KvBucket<Candidate>;
const said: string[] = [];
const stop = new AbortController();
let root = "";

before(async () => {
  root = await tempFolder("indexer-watch");
  bus = await startDeliveryBus();
  candidates = await KvBucket.open(bus.operator, Bucket.candidates);
  indexer = await Indexer.create({
    bus: bus.delivery,
    debounceMs: 100,
    pollMs: 500,
    log: (line) => said.push(line),
  });
  void indexer.run({ signal: stop.signal }).catch((e: unknown) => console.error(e));
});

after(async () => {
  stop.abort();
  await bus?.[Symbol.asyncDispose]();
});

async function moduleFolder(module: string): Promise<string> {
  const dir = join(root, module);
  await mkdir(join(dir, "src"), { recursive: true });
  await writeFile(join(dir, "mesh.yaml"), toolsManifest(module));
  await writeFile(join(dir, "src/tools.ts"), "export const n = 0;\n");
  return dir;
}

async function candidate(module: string, seq: number, what: string): Promise<Candidate> {
  return (await firstPut(candidates, candidateKey(module, seq), { what })).value;
}

describe("the indexer keeps noticing edits", () => {
  it("sees twelve edits under src/, a file renamed over, a folder made later and an edit in it: a candidate each", async () => {
    const dir = await moduleFolder("edits");
    await registerModule(bus.operator, dir, { by: "ada" });
    let seq = 1;
    await candidate("edits", seq, "the first candidate");
    const next = async (change: () => Promise<void>, what: string) => {
      await change();
      seq += 1;
      await candidate("edits", seq, what);
    };
    for (let i = 1; i <= 12; i++) {
      await next(
        () => writeFile(join(dir, "src/tools.ts"), `export const n = ${i};\n`),
        `the candidate after edit ${i}`,
      );
    }
    await next(async () => {
      // An editor's save: the new text written beside, then renamed over the old file.
      await writeFile(join(dir, "src/.tools.ts.swp"), "export const n = 'renamed';\n");
      await rename(join(dir, "src/.tools.ts.swp"), join(dir, "src/tools.ts"));
    }, "the candidate after a rename over");
    await next(async () => {
      await mkdir(join(dir, "src/deep/er"), { recursive: true });
      await writeFile(join(dir, "src/deep/er/more.ts"), "export const m = 1;\n");
    }, "the candidate after a new folder");
    await next(
      () => writeFile(join(dir, "src/deep/er/more.ts"), "export const m = 2;\n"),
      "the candidate after an edit in the new folder",
    );
    assert.equal(seq, 16);
  });

  it("a watch the system refuses falls back to a periodic digest and says so; edits are still noticed", async () => {
    const dir = await moduleFolder("limited");
    await registerModule(bus.operator, dir, { by: "ada" });
    await candidate("limited", 1, "the first candidate");
    const watcher = await deadline(
      (async () => {
        for (;;) {
          const found = indexer.watcherOf("limited");
          if (found !== undefined) return found;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })(),
      10_000,
      "the watcher",
    );
    // What inotify says when fs.inotify.max_user_watches is reached; no test should reach the
    // real limit on a shared machine.
    watcher.emit(
      "error",
      Object.assign(new Error("ENOSPC: System limit for number of file watchers reached"), {
        code: "ENOSPC",
      }),
    );
    assert.ok(
      said.some((line) => line.includes("limited:") && line.includes("digested every")),
      said.join("\n"),
    );
    assert.equal(indexer.watcherOf("limited"), undefined);
    await writeFile(join(dir, "src/tools.ts"), "export const n = 'polled';\n");
    await candidate("limited", 2, "the candidate the periodic digest finds");
  });
});
