// Lists threshold vectors with 1 ≤ T_i ≤ min(maxBatch_i, N), Σ(T_i − 1) < N and any fixed entries.

export type FixedThresholds = Readonly<Partial<Record<number, number>>>;

export function countFeasible(maxBatch: readonly number[], N: number, fixed: FixedThresholds = {}): number {
  // Count by DP over the slack used so far, so a huge space is detected without listing it.
  let ways = new Array<number>(N).fill(0);
  ways[0] = 1;
  maxBatch.forEach((B, i) => {
    const next = new Array<number>(N).fill(0);
    const f = fixed[i];
    for (let s = 0; s < N; s++) {
      if (ways[s] === 0) continue;
      for (let t = f ?? 1; t <= (f ?? Math.min(B, N)); t++) if (s + t - 1 < N) next[s + t - 1] += ways[s];
    }
    ways = next;
  });
  return ways.reduce((a, b) => a + b, 0);
}

export function feasibleThresholds(maxBatch: readonly number[], N: number, fixed: FixedThresholds = {}): number[][] {
  const out: number[][] = [];
  const K = maxBatch.length;
  const rec = (prefix: number[], slack: number): void => {
    const i = prefix.length;
    if (i === K) {
      out.push(prefix);
      return;
    }
    const f = fixed[i];
    const lo = f ?? 1;
    const hi = f ?? Math.min(maxBatch[i], N);
    for (let t = lo; t <= hi && slack + t - 1 < N; t++) rec([...prefix, t], slack + t - 1);
  };
  rec([], 0);
  return out;
}
