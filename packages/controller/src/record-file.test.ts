import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { RecordFile, journalPath, readRecords, type RecordFileOptions } from "./record-file.js";

interface Rec {
  readonly id: string;
  readonly n: number;
}

function options(path: string, slack?: number): RecordFileOptions<Rec> {
  return {
    path,
    fromSnapshot: (raw) => (raw as { recs: Rec[] }).recs,
    toSnapshot: (recs) => ({ recs }),
    parseRecord: (raw) => {
      const r = raw as Rec;
      if (typeof r.id !== "string" || typeof r.n !== "number") throw new Error("not a Rec");
      return r;
    },
    keyOf: (r) => r.id,
    ...(slack === undefined ? {} : { slack }),
  };
}

const byId = (recs: readonly Rec[]): Rec[] => [...recs].sort((a, b) => (a.id < b.id ? -1 : 1));

describe("RecordFile", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-record-file-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("keeps sets and deletes across a reopen: a snapshot first, then journal lines", async () => {
    const path = join(dir, "a.json");
    const file = await RecordFile.open(options(path));
    await file.save([
      { id: "x", n: 1 },
      { id: "y", n: 1 },
    ]);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    await file.save([{ id: "x", n: 2 }], ["y"]);
    await file.save([{ id: "z", n: 1 }]);
    const journal = await readFile(journalPath(path), "utf8");
    assert.equal(journal.trim().split("\n").length, 3, journal);
    assert.equal((await stat(journalPath(path))).mode & 0o777, 0o600);
    const { records } = await readRecords(options(path));
    assert.deepEqual(byId([...records.values()]), [
      { id: "x", n: 2 },
      { id: "z", n: 1 },
    ]);
    // Opening folds the journal into the snapshot.
    const again = await RecordFile.open(options(path));
    assert.deepEqual(byId(again.records()), byId([...records.values()]));
    await assert.rejects(stat(journalPath(path)), { code: "ENOENT" });
    assert.deepEqual(byId((JSON.parse(await readFile(path, "utf8")) as { recs: Rec[] }).recs), [
      { id: "x", n: 2 },
      { id: "z", n: 1 },
    ]);
  });

  it("writes what changed, not every record: one save among 2,000 records leaves the snapshot alone", async () => {
    const path = join(dir, "b.json");
    const file = await RecordFile.open(options(path));
    await file.save(Array.from({ length: 2_000 }, (_, i) => ({ id: `r${i}`, n: 0 })));
    const snapshot = await stat(path);
    await file.save([{ id: "r7", n: 1 }]);
    assert.equal((await stat(path)).mtimeMs, snapshot.mtimeMs, "the snapshot was not rewritten");
    assert.ok((await stat(journalPath(path))).size < 100, "one short journal line");
    const { records } = await readRecords(options(path));
    assert.equal(records.size, 2_000);
    assert.deepEqual(records.get("r7"), { id: "r7", n: 1 });
  });

  it("folds the journal into a new snapshot once it outgrows the records", async () => {
    const path = join(dir, "c.json");
    const file = await RecordFile.open(options(path, 3));
    await file.save([{ id: "a", n: 0 }]);
    for (let n = 1; n <= 5; n++) await file.save([{ id: "a", n }]);
    // 1 record + slack 3: the fifth journal line made a snapshot and emptied the journal.
    await assert.rejects(stat(journalPath(path)), { code: "ENOENT" });
    assert.deepEqual((JSON.parse(await readFile(path, "utf8")) as { recs: Rec[] }).recs, [
      { id: "a", n: 5 },
    ]);
  });

  it("drops a torn last line (a crash mid-append) and refuses a damaged one before it", async () => {
    const path = join(dir, "d.json");
    const file = await RecordFile.open(options(path));
    await file.save([{ id: "a", n: 0 }]);
    await file.save([{ id: "b", n: 0 }]);
    await appendFile(journalPath(path), '{"set":{"id":"c","n"');
    const reopened = await RecordFile.open(options(path));
    assert.deepEqual(byId(reopened.records()), [
      { id: "a", n: 0 },
      { id: "b", n: 0 },
    ]);
    await reopened.save([{ id: "c", n: 1 }]);
    await appendFile(journalPath(path), 'not json\n{"set":{"id":"e","n":0}}\n');
    await assert.rejects(RecordFile.open(options(path)), (error) =>
      isMeshError(error, ErrorCode.INVALID_VALUE),
    );
  });
});
