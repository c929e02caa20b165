import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { RotatingLog } from "./rotating-log.js";

const finished = (log: RotatingLog): Promise<void> =>
  new Promise((resolve, reject) =>
    log.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );

describe("mesh up's own logs", async () => {
  const folder = await mkdtemp(join(tmpdir(), "mesh-rotating-log-"));
  after(() => rm(folder, { recursive: true, force: true }));

  test("neither the file nor .1 ever holds more than the limit, whatever the writes", async () => {
    const path = join(folder, "controller.log");
    const log = new RotatingLog(path, 1000);
    let largest = 0;
    let written = 0;
    for (const size of [1, 999, 400, 5000, 37, 1000, 2500]) {
      const chunk = Buffer.alloc(size, "x");
      await new Promise<void>((resolve, reject) =>
        log.write(chunk, (error) => (error ? reject(error) : resolve())),
      );
      written += size;
      largest = Math.max(
        largest,
        (await stat(path)).size,
        (await stat(`${path}.1`).catch(() => ({ size: 0 }))).size,
      );
    }
    await finished(log);
    assert.ok(largest <= 1000, `a file grew to ${largest} bytes past the 1000-byte limit`);
    assert.ok(written > 2 * 1000, "the writes were more than two files hold");
    const kept = (await stat(path)).size + (await stat(`${path}.1`)).size;
    assert.ok(kept > 1000, `the newest output is kept across the two files (${kept} bytes)`);
  });

  test("goes on after what a file already held, and keeps the newest line last", async () => {
    const path = join(folder, "assigner.log");
    await writeFile(path, "a".repeat(900));
    const log = new RotatingLog(path, 1000);
    log.write("b".repeat(200));
    log.write("newest\n");
    await finished(log);
    assert.equal(await readFile(`${path}.1`, "utf8"), "a".repeat(900) + "b".repeat(100));
    assert.equal(await readFile(path, "utf8"), "b".repeat(100) + "newest\n");
  });
});
