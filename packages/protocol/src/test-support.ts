/**
 * Helpers for this package's tests only (never exported from the package): the refusal a call
 * throws, and good names as fast-check arbitraries.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type ErrorCode, type MeshError, isMeshError } from "./errors.js";
import type { Target } from "./keys.js";
import { Bucket } from "./layout.js";
import {
  ALL_NODES,
  BUILD_ID_PATTERN,
  KEY_NAME_PATTERN,
  NAME_PATTERN,
  TOOL_NAME_PATTERN,
} from "./names.js";

/** The refusal `fn` throws: a MeshError with `code`. */
export function refusal(fn: () => unknown, code: ErrorCode): MeshError {
  try {
    fn();
  } catch (error) {
    assert.ok(isMeshError(error), `expected a MeshError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected a ${code} refusal, but nothing was thrown`);
}

// Good names, as the rules of names.ts define them.
export const moduleName = fc.stringMatching(NAME_PATTERN);
export const nodeName = fc.stringMatching(NAME_PATTERN).filter((n) => n !== ALL_NODES);
export const stateName = fc.stringMatching(NAME_PATTERN);
export const toolName = fc.stringMatching(TOOL_NAME_PATTERN);
export const keyName = fc.stringMatching(KEY_NAME_PATTERN);
export const buildId = fc.stringMatching(BUILD_ID_PATTERN);
export const seq = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
export const target: fc.Arbitrary<Target> = fc.oneof(
  nodeName.map((node) => ({ node })),
  fc.constant({ all: true as const }),
);

/** A good `mesh-summary.fleet` value, for the bucket samples. */
export const SUMMARY_SAMPLE = {
  at: "2025-01-02T03:04:05.000Z",
  nodes: { total: 2, present: 1, gone: 1, never: 0 },
  cells: { assigned: 2, healthy: 1, starting: 0, notRunning: 1, leaving: 0 },
  modules: [{ module: "hello", assigned: 2, healthy: 1, starting: 0, notRunning: 1 }],
  attention: {
    cells: 1,
    nodes: 1,
    first: [
      {
        node: "edge-02",
        module: "hello",
        state: "not-running",
        reason: "edge-02 is gone",
        fix: "start its host",
      },
    ],
  },
  leaving: { first: [] },
  differences: {
    total: 1,
    first: [
      { key: "edge-02.hello", difference: { want: "1-e3b0c442", reasons: ["not reported"] } },
    ],
  },
};

/** A resolved rollout policy, as a rollout record carries it: the default on a small fleet. */
const RESOLVED_POLICY = {
  canary: 1,
  batch: 1,
  minHealthyMs: 30_000,
  healthyDeadlineMs: 300_000,
  maxFailing: 0,
  pauseAfterCanary: false,
  order: "name",
  source: "default",
} as const;

/** A good value of each rollout bucket. */
export const ROLLOUT_SAMPLES = {
  [Bucket.rolloutPolicies]: {
    policy: { canary: 1, batch: "25%", "min-healthy": "30s", order: "label=arch" },
    by: "ada",
    at: "2025-01-02T03:04:05.000Z",
  },
  [Bucket.rolloutSteers]: {
    build: "3-abcdef01",
    action: "retry",
    attempt: 1,
    by: "ada",
    at: "2025-01-02T03:04:05.000Z",
  },
  [Bucket.rollouts]: {
    module: "hello",
    build: "3-abcdef01",
    from: ["2-abcdef01"],
    attempt: 1,
    status: "failed",
    wave: 1,
    waves: 4,
    admitted: ["edge-01"],
    waveNodes: ["edge-01"],
    waveAt: "2025-01-02T03:04:05.000Z",
    policy: RESOLVED_POLICY,
    waiting: "nothing: halted",
    failed: { reason: "edge-01 failing", nodes: [{ node: "edge-01", error: "exited with 1" }] },
  },
  [Bucket.configRollouts]: {
    value: "Hi",
    by: "ada",
    at: "2025-01-02T03:04:05.000Z",
    steer: { action: "pause", by: "ada", at: "2025-01-02T03:05:05.000Z" },
  },
  [Bucket.configWaves]: {
    module: "hello",
    key: "greeting",
    value: "Hi",
    fingerprint: "a".repeat(64),
    request: "2025-01-02T03:04:05.000Z",
    by: "ada",
    status: "rolling",
    wave: 1,
    waves: 3,
    admitted: ["edge-01"],
    waveNodes: ["edge-01"],
    waveAt: "2025-01-02T03:04:05.000Z",
    policy: RESOLVED_POLICY,
    waiting: 'wave 1 of 3 (edge-01): each runs greeting="Hi" healthy for 30s',
  },
} as const;
