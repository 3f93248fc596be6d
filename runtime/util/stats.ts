// Mean, median and percentiles exactly as numpy computes them (linear interpolation), so figures match vLLM's; used by the load generator, the bench suites and the step-latency profile.

export interface Summary {
  count: number;
  mean: number;
  median: number;
  p99: number;
  min: number;
  max: number;
}

/** numpy.percentile(values, q) with the default "linear" method; NaN for an empty list. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  if (!(q >= 0 && q <= 100)) throw new RangeError(`percentile must be in [0, 100], got ${q}`);
  const s = Float64Array.from(values).sort();
  const rank = (q / 100) * (s.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (s[hi] - s[lo]) * (rank - lo);
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { count: 0, mean: NaN, median: NaN, p99: NaN, min: NaN, max: NaN };
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { count: values.length, mean: mean(values), median: percentile(values, 50), p99: percentile(values, 99), min, max };
}
