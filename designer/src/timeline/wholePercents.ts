// Whole-number percentages of a total that add up to exactly 100 (largest remainder), for the request panel's model shares.

/** Each count's share in whole percent; rounding each alone gave 99 or 101 (5 of 8 and 3 of 8: 63 + 38). */
export function wholePercents(counts: readonly number[]): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total <= 0) return counts.map(() => 0);
  const exact = counts.map((c) => (100 * c) / total);
  const out = exact.map(Math.floor);
  let left = 100 - out.reduce((a, b) => a + b, 0);
  // the largest fractional parts get the points still missing; ties go to the earlier entry
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left-- <= 0) break;
    out[i]++;
  }
  return out;
}
