// Pure batch planning: which ready rows a step takes, and how far each may look ahead, from a read-only view of the lane.
import type { StepPhase } from '../runner/modelRunner.ts';

/** One ready request, in FIFO order, as the planner sees it. */
export interface ReadyRow {
  /** Tokens in its cache here (0: the step prefills). */
  readonly fed: number;
  /** Tokens the step feeds (the committed sequence past its cache). */
  readonly unfed: number;
  /** More tokens it may commit before its length limit, after this step's one. */
  readonly room: number;
  /** Tokens to go below min_tokens, after this step's one (EOS suppression must not change inside lookahead). */
  readonly belowMin: number;
  /** A batch still running serves it by streamed lookahead: it waits for that batch, not a new one. */
  readonly awaitingAhead: boolean;
}

export interface BatchPolicy {
  maxBatch: number;
  /** Most lookahead steps any row may ask for now (0: none). */
  aheadCap: number;
}

export interface BatchPlan {
  /** Indices into the ready list, in launch order. */
  rows: number[];
  /** Lookahead steps per planned row. */
  ahead: number[];
  phase: StepPhase;
  /** Tokens fed in all. */
  tokens: number;
}

/** FIFO up to maxBatch, skipping rows a running batch still serves. */
export function planBatch(ready: readonly ReadyRow[], policy: BatchPolicy): BatchPlan {
  const plan: BatchPlan = { rows: [], ahead: [], phase: 'decode', tokens: 0 };
  for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch; i++) {
    const r = ready[i];
    if (r.awaitingAhead) continue;
    plan.rows.push(i);
    plan.ahead.push(policy.aheadCap === 0 ? 0 : Math.max(0, Math.min(policy.aheadCap, r.room, r.belowMin)));
    plan.tokens += r.unfed;
    if (r.fed === 0) plan.phase = 'prefill';
    else if (r.unfed > 1 && plan.phase === 'decode') plan.phase = 'extend';
  }
  return plan;
}

/** A row that stepped here stays with this chance (a moving average); look ahead only while stay^s ≥ minChance. */
export function aheadCap(lookahead: number, runnerMaxAhead: number, stayRate: number, minChance = 0.5): number {
  const cap = Math.min(lookahead, runnerMaxAhead);
  if (cap <= 0 || stayRate <= minChance) return 0;
  if (stayRate >= 1) return cap;
  return Math.min(cap, Math.floor(Math.log(minChance) / Math.log(stayRate)));
}
