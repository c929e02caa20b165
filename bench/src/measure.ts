/**
 * Helpers every benchmark uses. These machines are shared and noisy, so a figure is reported
 * beside a baseline measured in the same run, and as a ratio to it; absolute numbers are shown
 * but only the ratios are compared between runs.
 */

/** Runs `fn` `count` times and returns each run's duration in milliseconds. */
export async function timeEach(
  count: number,
  fn: (i: number) => Promise<void> | void,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return out;
}

/** The q-quantile (0..1) of durations. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

/** Operations per second of `count` operations that took `ms` in all. */
export const perSecond = (count: number, ms: number): number => (count * 1000) / ms;

/** Calls per second of `total` calls of `fn`, `inFlight` of them at a time. */
export async function throughput(
  fn: (n: number) => Promise<unknown>,
  total: number,
  inFlight: number,
): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await fn(next++);
    }),
  );
  return perSecond(total, Number(process.hrtime.bigint() - start) / 1e6);
}

/** One line of a report: the figure, its baseline and their ratio. */
export function line(
  what: string,
  value: number,
  unit: string,
  baseline?: { what: string; value: number },
): string {
  const shown = `${what}: ${format(value)} ${unit}`;
  if (baseline === undefined) return shown;
  return `${shown}  | baseline ${baseline.what}: ${format(baseline.value)} ${unit}  | ratio ${(value / baseline.value).toFixed(2)}`;
}

function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(2) : value.toPrecision(3);
}
