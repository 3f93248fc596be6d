// Delayed-batching feasibility: Σ(T_i − 1) < N, else every model can wait on the others forever.
import { ThroughputError } from './ThroughputError.ts';

export interface FeasibilityReport {
  feasible: boolean;
  /** Σ_i (T_i − 1): the most requests that can sit in queues with every model idle. */
  slack: number;
  N: number;
}

/** Pure check; never throws. */
export function isFeasible(thresholds: readonly number[], N: number): FeasibilityReport {
  let slack = 0;
  for (const t of thresholds) slack += t - 1;
  return { feasible: slack < N, slack, N };
}

/**
 * Throws INFEASIBLE_THRESHOLDS when every model could be idle with a sub-threshold queue at once
 * (Σ(T_i − 1) ≥ N), and INVALID_INPUT for thresholds that are not integers in [1, maxBatch_i].
 */
export function checkFeasible(thresholds: readonly number[], N: number, maxBatch?: readonly number[]): void {
  if (!Number.isInteger(N) || N < 1) {
    throw new ThroughputError('INVALID_INPUT', `concurrency N must be an integer ≥ 1, got ${N}`, { N });
  }
  thresholds.forEach((t, i) => {
    const cap = maxBatch?.[i] ?? Infinity;
    if (!Number.isInteger(t) || t < 1 || t > cap) {
      throw new ThroughputError('INVALID_INPUT', `threshold T_${i} = ${t} must be an integer in [1, ${cap}] (maxBatch)`, {
        model: i,
        threshold: t,
        maxBatch: cap,
      });
    }
  });
  const r = isFeasible(thresholds, N);
  if (!r.feasible) {
    throw new ThroughputError(
      'INFEASIBLE_THRESHOLDS',
      `thresholds [${thresholds.join(', ')}] are infeasible for N = ${N}: Σ(T_i − 1) = ${r.slack} ≥ N, ` +
        'so all models can idle waiting for each other forever',
      { thresholds: [...thresholds], N, slack: r.slack },
    );
  }
}
