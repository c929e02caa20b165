import assert from "node:assert/strict";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError, parseJoinToken } from "@mesh/protocol";
import { JOIN_TOKENS_FILE, JoinTokens, MAX_JOIN_TOKEN_TTL_MS } from "./join-tokens.js";

const refused = (e: unknown) => isMeshError(e, ErrorCode.REFUSED);

describe("JoinTokens", () => {
  it("a token works once, until it expires, and only whole", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mesh-tokens-"));
    try {
      const t0 = new Date("2026-01-01T00:00:00Z");
      const tokens = await JoinTokens.open(dir);
      const made = await tokens.create({ ttlMs: 60_000, now: t0 });
      assert.ok(parseJoinToken(made.token) !== undefined);
      assert.equal(((await stat(join(dir, JOIN_TOKENS_FILE))).mode & 0o777).toString(8), "600");

      await assert.rejects(tokens.take(`${made.id}.${"x".repeat(43)}`, "n1", t0), refused);
      await assert.rejects(tokens.take("not-a-token", "n1", t0), refused);
      assert.deepEqual(await tokens.take(made.token, "n1", t0), { id: made.id });
      assert.deepEqual(tokens.takeSpent(t0), [made.id], "used: its join user goes");
      // Kept across a restart: used is used.
      const again = await JoinTokens.open(dir);
      await assert.rejects(
        again.take(made.token, "n2", t0),
        (e) => refused(e) && /used/.test(String(e)),
      );
      assert.deepEqual(again.takeSpent(t0), [made.id]);
      assert.deepEqual(again.takeSpent(t0), [], "each spent token is handed out once");

      const late = await again.create({ ttlMs: 1_000, now: t0 });
      await assert.rejects(
        again.take(late.token, "n3", new Date(t0.getTime() + 1_000)),
        (e) => refused(e) && /expired/.test(String(e)),
      );
      assert.deepEqual(again.takeSpent(t0), [], "not expired yet");
      assert.deepEqual(again.takeSpent(new Date(t0.getTime() + 1_000)), [late.id]);
      // A week past expiry a token is forgotten: its refusal no longer says "used".
      await again.prune(new Date(t0.getTime() + 60_000 + MAX_JOIN_TOKEN_TTL_MS));
      await assert.rejects(
        again.take(made.token, "n2", t0),
        (e) => refused(e) && /not one this mesh made/.test(String(e)),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
