// Scheduling modes, their settings, and the delayed-batching feasibility rule Σ(T_i − 1) < N.
import { TokenRouterError } from '../errors.ts';

import { SCHEDULING_MODES } from '../../shared/protocol/engineProtocol.ts';

export { SCHEDULING_MODES };
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

/** Thresholds a deployment may run: each within its model's max batch, Σ(T − 1) < N, and a deadline when any T > 1. */
export function validateThresholds(
  mode: SchedulingMode,
  models: readonly { name: string; maxBatch: number }[],
  thresholds: readonly number[],
  concurrency: number,
  maxWaitMs: number,
): void {
  if (mode !== 'async-delayed') return;
  models.forEach((l, i) => {
    if (thresholds[i] > l.maxBatch) {
      throw new TokenRouterError('infeasible_thresholds', `threshold ${thresholds[i]} of ${l.name} exceeds its max batch ${l.maxBatch}`, 'thresholds');
    }
  });
  if (Number.isFinite(concurrency))
    checkFeasible(
      thresholds,
      concurrency,
      models.map((l) => l.name),
    );
  // Fewer than N requests are in flight whenever traffic thins out; only a deadline keeps that live.
  if (thresholds.some((t) => t > 1) && !Number.isFinite(maxWaitMs)) {
    throw new TokenRouterError('infeasible_thresholds', 'thresholds above 1 need a finite max-wait deadline (maxWaitMs)', 'maxWaitMs');
  }
}
