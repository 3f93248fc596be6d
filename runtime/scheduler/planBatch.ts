// Pure batch planning: which ready rows a step takes, from a read-only view of the lane.
import type { StepPhase } from '../runner/modelRunner.ts';

/** One ready request, in FIFO order, as the planner sees it. */
export interface ReadyRow {
  /** Tokens in its cache here (0: the step prefills). */
  readonly fed: number;
  /** Tokens the step feeds (the committed sequence past its cache). */
  readonly unfed: number;
}

export interface BatchPolicy {
  maxBatch: number;
}

export interface BatchPlan {
  /** Indices into the ready list, in launch order. */
  rows: number[];
  phase: StepPhase;
  /** Tokens fed in all. */
  tokens: number;
}

/** FIFO up to maxBatch. */
export function planBatch(ready: readonly ReadyRow[], policy: BatchPolicy): BatchPlan {
  const plan: BatchPlan = { rows: [], phase: 'decode', tokens: 0 };
  for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch; i++) {
    const r = ready[i];
    plan.rows.push(i);
    plan.tokens += r.unfed;
    if (r.fed === 0) plan.phase = 'prefill';
    else if (r.unfed > 1 && plan.phase === 'decode') plan.phase = 'extend';
  }
  return plan;
}
