// Pure batch planning: which ready rows a step takes, and how many tokens each feeds, under a per-step token budget.
import type { StepPhase } from '../runner/modelRunner.ts';

/** One ready request, in FIFO order, as the planner sees it. */
export interface ReadyRow {
  /** Tokens in its cache here (0: the step prefills). */
  readonly fed: number;
  /** Tokens the step would feed to catch up (the committed sequence past its cache). */
  readonly unfed: number;
}

export interface BatchPolicy {
  maxBatch: number;
  /**
   * Tokens one step feeds at most, all rows together (vLLM's `max_num_batched_tokens`); Infinity or
   * absent: no bound, every row feeds all it has unfed.
   */
  maxStepTokens?: number;
}

export interface BatchPlan {
  /** Indices into the ready list, in launch order: decode rows first, then prompt chunks. */
  rows: number[];
  /** Tokens each planned row feeds (same order as `rows`): below its `unfed` for a chunk that leaves the rest to later steps. */
  feed: number[];
  phase: StepPhase;
  /** Tokens fed in all. */
  tokens: number;
}

/**
 * Decode rows (one token to feed) first, in FIFO order, then the rows with several tokens to feed
 * (prefills, a handoff's unseen suffix) in FIFO order, each given what is left of the token budget:
 * a long prompt is fed in chunks across steps, so it never holds the decoding rows up for its whole
 * length (vLLM's chunked prefill). Each row feeds at least one token when it is taken, so a step
 * always makes progress.
 */
export function planBatch(ready: readonly ReadyRow[], policy: BatchPolicy): BatchPlan {
  const plan: BatchPlan = { rows: [], feed: [], phase: 'decode', tokens: 0 };
  let budget = policy.maxStepTokens ?? Infinity;
  for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch && budget > 0; i++) {
    const r = ready[i];
    if (r.unfed > 1) continue;
    take(plan, i, r, r.unfed);
    budget -= Math.max(1, r.unfed);
  }
  for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch && budget > 0; i++) {
    const r = ready[i];
    if (r.unfed <= 1) continue;
    const n = Math.min(r.unfed, budget);
    take(plan, i, r, n);
    budget -= n;
  }
  return plan;
}

function take(plan: BatchPlan, i: number, r: ReadyRow, n: number): void {
  plan.rows.push(i);
  plan.feed.push(n);
  plan.tokens += n;
  if (r.fed === 0) plan.phase = 'prefill';
  else if (n > 1 && plan.phase === 'decode') plan.phase = 'extend';
}
