// Scheduling modes, their settings, and the delayed-batching feasibility rule Σ(T_i − 1) < N.
import { TokenRouterError } from '../errors.ts';

export const SCHEDULING_MODES = ['step-sync', 'model-sync', 'async-immediate', 'async-delayed'] as const;
export type SchedulingMode = (typeof SCHEDULING_MODES)[number];

/**
 * With N requests in flight and every model i holding T_i − 1 of them just below its threshold,
 * nothing launches; the sum must stay below N so that some model always reaches its threshold.
 */
export function checkFeasible(thresholds: readonly number[], concurrency: number, names?: readonly string[]): void {
  thresholds.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 1) {
      throw new TokenRouterError('infeasible_thresholds', `threshold of ${names?.[i] ?? `model ${i + 1}`} must be an integer ≥ 1, got ${t}`, 'thresholds');
    }
  });
  const slack = thresholds.reduce((s, t) => s + (t - 1), 0);
  if (slack >= concurrency) {
    throw new TokenRouterError(
      'infeasible_thresholds',
      `thresholds [${thresholds.join(', ')}] are infeasible at concurrency ${concurrency}: Σ(T_i − 1) = ${slack} must be < ${concurrency}, or every model can wait on the others forever`,
      'thresholds',
    );
  }
}
