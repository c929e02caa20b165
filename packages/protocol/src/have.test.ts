import { test } from "node:test";
import assert from "node:assert/strict";
import { Have } from "./values.js";

const base = {
  build: "1-e3b0c442",
  fingerprint: "f1",
  health: "starting",
  since: "2026-12-02T10:00:00.000Z",
  restarts: 2,
};

const refusedAt = (value: unknown): string[] => {
  const result = Have.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => i.path.join("."));
};

// Issue 27: a have's reasons carry a code of the closed table beside their words.
test("a have of an older host, its reasons in words only, still parses", () => {
  const older = {
    ...base,
    lastError: "p exited with code 1",
    waitingFor: { what: "waiting for the bus to fetch app's bundle", fix: "nothing to do" },
  };
  assert.deepEqual(Have.parse(older), older);
  const now = {
    ...older,
    lastErrorCode: "PROCESS_EXITED",
    waitingFor: { ...older.waitingFor, code: "BUS_UNAVAILABLE" },
  };
  assert.deepEqual(Have.parse(now), now);
});

test("a have's codes are of the table: one in no table is refused at its path", () => {
  assert.deepEqual(refusedAt({ ...base, lastError: "boom", lastErrorCode: "internal" }), [
    "lastErrorCode",
  ]);
  assert.deepEqual(refusedAt({ ...base, waitingFor: { code: "bus", what: "w", fix: "f" } }), [
    "waitingFor.code",
  ]);
});
