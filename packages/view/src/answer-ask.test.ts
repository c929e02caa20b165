/**
 * `answerAsk`, the one call `mesh answer` and the view's page make, on a real bus with the
 * operator's grant: an answer to a standing ask is written with who and when; an ask that does
 * not stand, an id that is no ask's name and an answer that is neither yes nor no are refused
 * with their codes, and nothing is written.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KvBucket } from "@mesh/bus";
import { Bucket, ErrorCode, askKey, isMeshError } from "@mesh/protocol";
import { answerAsk } from "./answer-ask.js";
import { ASK_ID, seedMesh, startTestMesh, type TestMesh } from "./test-support.js";

describe("answerAsk", () => {
  let mesh: TestMesh;

  before(async () => {
    mesh = await startTestMesh();
    await seedMesh(mesh.admin);
  });
  after(async () => {
    await mesh?.stop();
  });

  it("writes the answer to a standing ask, with who and when, and says what it answered", async () => {
    const done = await answerAsk(mesh.operator, { id: ASK_ID, answer: "yes", by: "ada" });
    assert.equal(
      done.message,
      `answered yes to ${ASK_ID}: board 3 reads counter/count, which build 1 did not: allow it?`,
    );
    const written = await (await KvBucket.open(mesh.admin, Bucket.answers)).get(askKey(ASK_ID));
    assert.deepEqual(written?.value, done.value);
    assert.equal(written?.value.answer, "yes");
    assert.equal(written?.value.by, "ada");
    assert.ok(Date.parse(written?.value.at ?? "") > 0);
  });

  it("refuses an ask that does not stand, a bad id and an answer other than yes or no, writing nothing", async () => {
    const answers = await KvBucket.open(mesh.admin, Bucket.answers);
    const refusals: Array<[Parameters<typeof answerAsk>[1], ErrorCode]> = [
      [{ id: "a-withdrawn", answer: "yes", by: "ada" }, ErrorCode.NOT_FOUND],
      [{ id: "No Such Id", answer: "yes", by: "ada" }, ErrorCode.INVALID_INPUT],
      [{ id: "a-withdrawn", answer: "maybe" as "yes", by: "ada" }, ErrorCode.INVALID_INPUT],
    ];
    for (const [input, code] of refusals) {
      await assert.rejects(answerAsk(mesh.operator, input), (error) => isMeshError(error, code));
    }
    assert.equal(await answers.get(askKey("a-withdrawn")), undefined);
  });
});
