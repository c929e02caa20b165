/**
 * A stream as a mirror source, on a real bus: keyed by the subject past the prefix, the last
 * word per subject standing, a message that breaks the schema taken as absent, and a new
 * message after ready told under its key.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Keeps, Stream, Subject, keepsSubject } from "@mesh/protocol";
import { publishRaw } from "../testing/buckets.js";
import { deadline } from "../testing/harness.js";
import { Mirror, type MirrorChange } from "./mirror.js";
import { streamSource } from "./sources.js";
import { busSuite } from "../testing/fixtures.js";
import { Heard } from "./test-support.js";

const fx = busSuite({ module: "mirror", layout: true }, { before, after });

const keeps = (node: string, module: string, readable: boolean): Keeps => ({
  node,
  module,
  states: [{ name: "counts", readable }],
  at: new Date().toISOString(),
});

const say = (k: Keeps): Promise<void> =>
  publishRaw(fx.admin, keepsSubject(k.node, k.module), JSON.stringify(k));

describe("a stream as a mirror source", () => {
  it("keeps the last word per subject under its key, drops one that breaks the schema, and tells a key said again", async () => {
    await say(keeps("n1", "alpha", true));
    await say(keeps("n1", "alpha", false));
    await say(keeps("n2", "beta", true));
    await publishRaw(fx.admin, keepsSubject("n3", "gamma"), "not json");
    const lines: string[] = [];
    const heard = new Heard<MirrorChange>();
    await using mirror = Mirror.start({
      sources: {
        keeps: {
          bucket: streamSource(fx.admin, {
            stream: Stream.keeps,
            prefix: Subject.keepsPrefix,
            schema: Keeps,
            deliver: "last-per-subject",
          }),
        },
      },
      onChange: heard.onChange,
      log: (line) => lines.push(line),
    });
    await deadline(mirror.ready, 30_000, "the keeps stream handing what stands");
    const kept = mirror.map("keeps");
    assert.deepEqual([...kept.keys()].sort(), ["n1.alpha", "n2.beta"]);
    assert.equal(kept.get("n1.alpha")?.states[0]?.readable, false, "the last word of n1.alpha");
    assert.ok(
      lines.some((l) => l.startsWith("keeps n3.gamma:")),
      `the broken message is said: ${lines.join(" | ")}`,
    );

    const standing = heard.changes.length;
    await say(keeps("n2", "beta", false));
    await heard.until(
      () => kept.get("n2.beta")?.states[0]?.readable === false,
      "n2.beta said again reaching the mirror",
    );
    assert.deepEqual([...heard.keys(standing)], ["n2.beta"]);
  });
});
