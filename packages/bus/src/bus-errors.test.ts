/**
 * Which failures of the bus are made again: a transient one (nothing answered, JetStream off or
 * its cluster without a meta leader for a moment) by every call, a read not answered in time by
 * reads only (decision 0182), and never a refusal.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NoRespondersError, TimeoutError } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { isTransient, isUnansweredRead } from "./bus-errors.js";

const apiError = (code: number, err_code: number, description: string) =>
  new JetStreamApiError({ code, err_code, description });

const cases: ReadonlyArray<[string, unknown, { transient: boolean; read: boolean }]> = [
  ["no responders", new NoRespondersError("$JS.API.INFO"), { transient: true, read: true }],
  [
    "a cluster without a meta leader (10008)",
    apiError(503, 10008, "JetStream system temporarily unavailable"),
    { transient: true, read: true },
  ],
  [
    "no responders under a MeshError",
    new MeshError(ErrorCode.NOT_FOUND, "x", { cause: new NoRespondersError("s") }),
    { transient: true, read: true },
  ],
  ["no answer in time", new TimeoutError(), { transient: false, read: true }],
  ["a MeshError TIMEOUT", new MeshError(ErrorCode.TIMEOUT, "x"), { transient: false, read: true }],
  [
    "a stream that does not exist (10059)",
    apiError(404, 10059, "stream not found"),
    { transient: false, read: false },
  ],
  ["a refusal", new MeshError(ErrorCode.REFUSED, "no"), { transient: false, read: false }],
];

for (const [what, error, expected] of cases) {
  test(`${what}: transient ${expected.transient}, a read made again ${expected.read}`, () => {
    assert.equal(isTransient(error), expected.transient);
    assert.equal(isUnansweredRead(error), expected.read);
  });
}
