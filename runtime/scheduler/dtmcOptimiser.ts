// The threshold optimiser backed by the throughput model: predicts every feasible threshold vector, keeps the best.
import { solveThroughput } from '../throughput/solveThroughput.ts';
import type { OptimiserAnswer, OptimiserInput } from './autoThresholds.ts';

/** Feasible vectors: 1 ≤ T_i ≤ maxBatch_i and Σ(T_i − 1) < N. */
export function feasibleThresholds(maxBatch: readonly number[], N: number): number[][] {
  const out: number[][] = [];
  const rec = (prefix: number[], slack: number) => {
    if (prefix.length === maxBatch.length) return void out.push(prefix);
    for (let t = 1; t <= maxBatch[prefix.length] && slack + t - 1 < N; t++) rec([...prefix, t], slack + t - 1);
  };
  rec([], 0);
  return out;
}

export function dtmcOptimiser(input: OptimiserInput, current: readonly number[]): OptimiserAnswer {
  const predict = (thresholds: readonly number[]) => solveThroughput({ ...input, thresholds }).tokensPerSec;
  let best = current.slice();
  let predictedBest = -1;
  for (const t of feasibleThresholds(input.maxBatch, input.N)) {
    const p = predict(t);
    if (p > predictedBest) {
      predictedBest = p;
      best = t;
    }
  }
  const feasibleNow = current.reduce((s, t) => s + t - 1, 0) < input.N;
  return { best, predictedBest, predictedCurrent: feasibleNow ? predict(current) : 0 };
}
