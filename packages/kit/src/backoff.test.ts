import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { Backoff, backoffDelay, type BackoffOptions } from "./backoff.js";

/** A backoff with a clock and a random source the test turns. */
function controlled(options: Omit<BackoffOptions, "now" | "random">, random = 0) {
  const clock = { now: 0, random };
  const backoff = new Backoff({ ...options, now: () => clock.now, random: () => clock.random });
  return { backoff, clock };
}

describe("Backoff", () => {
  const host = { initialMs: 1_000, maxMs: 300_000 };
  const table: {
    name: string;
    options: Omit<BackoffOptions, "now" | "random">;
    random: number;
    delays: number[];
  }[] = [
    {
      name: "the host's: 1 s doubling to 5 min, no jitter drawn",
      options: host,
      random: 0,
      delays: [
        1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000,
      ],
    },
    {
      name: "the most jitter takes a fifth off by default",
      options: host,
      random: 0.999_999,
      delays: [800, 1_600, 3_200, 6_400],
    },
    {
      name: "a multiplier of 3 and no jitter",
      options: { initialMs: 250, maxMs: 5_000, multiplier: 3, jitter: 0 },
      random: 0.5,
      delays: [250, 750, 2_250, 5_000, 5_000],
    },
    {
      name: "half jitter at the middle takes a quarter off",
      options: { initialMs: 1_000, maxMs: 4_000, jitter: 0.5 },
      random: 0.5,
      delays: [750, 1_500, 3_000, 3_000],
    },
  ];
  for (const row of table) {
    test(row.name, () => {
      const { backoff } = controlled(row.options, row.random);
      assert.deepEqual(
        row.delays.map(() => backoff.next()),
        row.delays,
      );
      assert.equal(backoff.failures, row.delays.length);
    });
  }

  test("a run that lasted healthyMs starts the delays over; a shorter one does not", () => {
    const { backoff, clock } = controlled({ ...host, healthyMs: 30_000, jitter: 0 });
    backoff.started();
    assert.equal(backoff.next(), 1_000);
    backoff.started();
    clock.now += 29_999;
    assert.equal(backoff.next(), 2_000, "not healthy yet");
    backoff.started();
    clock.now += 30_000;
    assert.equal(backoff.next(), 1_000, "healthy: over again");
    clock.now += 60_000;
    assert.equal(backoff.next(), 2_000, "no run began, so none was healthy");
  });

  test("a run that ended without failing neither counts nor resets", () => {
    const { backoff, clock } = controlled({ ...host, healthyMs: 30_000, jitter: 0 });
    assert.equal(backoff.next(), 1_000);
    backoff.started();
    clock.now += 60_000;
    backoff.ended();
    assert.equal(backoff.failures, 1);
    assert.equal(
      backoff.next(),
      2_000,
      "the long run ended quietly, so it did not reset the delays",
    );
  });

  test("reset() starts over", () => {
    const { backoff } = controlled({ ...host, jitter: 0 });
    backoff.next();
    backoff.next();
    backoff.reset();
    assert.equal(backoff.failures, 0);
    assert.equal(backoff.next(), 1_000);
  });

  const refused: [string, Partial<BackoffOptions>][] = [
    ["initialMs", { initialMs: 0 }],
    ["maxMs", { maxMs: 10 }],
    ["multiplier", { multiplier: 0.5 }],
    ["jitter", { jitter: 0.6 }],
    ["jitter", { jitter: -0.1 }],
    ["healthyMs", { healthyMs: 0 }],
  ];
  for (const [field, bad] of refused) {
    test(`refuses a ${field} out of range, naming it`, () => {
      assert.throws(
        () => new Backoff({ ...host, ...bad }),
        (error: unknown) =>
          isMeshError(error) &&
          error.code === ErrorCode.INVALID_VALUE &&
          error.message.includes(field),
      );
    });
  }
});

describe("backoffDelay (property)", () => {
  const options = fc.record({
    initialMs: fc.integer({ min: 1, max: 10_000 }),
    extra: fc.integer({ min: 0, max: 1_000_000 }),
    multiplier: fc.double({ min: 2, max: 10, noNaN: true }),
    jitter: fc.double({ min: 0, max: 0.5, noNaN: true }),
  });
  const randoms = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
    minLength: 2,
    maxLength: 30,
  });

  test("every delay lies between initialMs·(1−jitter) and maxMs", () => {
    fc.assert(
      fc.property(options, randoms, (o, rs) => {
        const p = { ...o, maxMs: o.initialMs + o.extra };
        rs.forEach((r, failures) => {
          const d = backoffDelay(p, failures, r);
          assert.ok(d <= p.maxMs, `${d} > maxMs ${p.maxMs}`);
          assert.ok(d >= Math.floor(p.initialMs * (1 - p.jitter)), `${d} below the floor`);
        });
      }),
    );
  });

  test("before the cap, each delay is at least the one before, whatever the jitter drew", () => {
    fc.assert(
      fc.property(options, randoms, (o, rs) => {
        const p = { ...o, maxMs: o.initialMs + o.extra };
        for (let failures = 1; failures < rs.length; failures++) {
          if (p.initialMs * p.multiplier ** failures >= p.maxMs) break; // the cap is reached
          const before = backoffDelay(p, failures - 1, rs[failures - 1] ?? 0);
          const now = backoffDelay(p, failures, rs[failures] ?? 0);
          assert.ok(now >= before, `delay ${failures}: ${now} < ${before}`);
        }
      }),
    );
  });
});
