// A step's batch on one engine: which ready rows it takes (a pure planner), the batch in flight, the engine's tallies.
import type { TraceEvent } from '../../shared/trace.ts';
import type { StepPhase, StepRow } from '../runner/modelRunner.ts';
import type { LocalRequest } from './localRequest.ts';

/** One ready request as the planner sees it: tokens in its cache (0: the step prefills), tokens the step would feed to catch up. */
export type ReadyRow = { readonly fed: number; readonly unfed: number };

/** `maxStepTokens`: tokens one step feeds at most, all rows together (vLLM's `max_num_batched_tokens`); absent or Infinity: no bound. */
export type BatchPolicy = { maxBatch: number; maxStepTokens?: number };

export interface BatchPlan {
  /** Indices into the ready list, in launch order: decode rows first, then prompt chunks. */
  rows: number[];
  /** Tokens each planned row feeds (same order as `rows`): below its `unfed` for a chunk that leaves the rest to later steps. */
  feed: number[];
  phase: StepPhase;
  /** Tokens fed in all. */
  tokens: number;
}

/** Decode rows first, then rows with several tokens to feed, each in FIFO order and given what is left of the token budget (vLLM's chunked prefill). */
export function planBatch(ready: readonly ReadyRow[], policy: BatchPolicy): BatchPlan {
  const plan: BatchPlan = { rows: [], feed: [], phase: 'decode', tokens: 0 };
  let budget = policy.maxStepTokens ?? Infinity;
  for (const decode of [true, false]) {
    for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch && budget > 0; i++) {
      const r = ready[i];
      if (r.unfed <= 1 !== decode) continue;
      const n = decode ? r.unfed : Math.min(r.unfed, budget);
      plan.rows.push(i);
      plan.feed.push(n);
      plan.tokens += n;
      budget -= Math.max(1, n);
      if (r.fed === 0) plan.phase = 'prefill';
      else if (n > 1 && plan.phase === 'decode') plan.phase = 'extend';
    }
  }
  return plan;
}

export interface Batch {
  id: number;
  locals: LocalRequest[];
  rows: StepRow[];
  /** Clock ms at launch. */
  start: number;
  phase: StepPhase;
  tokens: number;
  /** Wall ms the runner's own call took. */
  wallMs: number;
  /** Rows whose results are applied so far: the locals past them are still in the step. */
  applied: number;
  /** Clock ms when the runner's results came back; model ms the runner reported for it. */
  resultAt: number;
  modelMs: number;
  /** Prompt tokens its rows did not feed because their caches started from the prefix cache. */
  cachedTokens: number;
  /** Rows a grammar masked. */
  maskedRows: number;
}

/** An engine's tallies, in the order its lane figures (LaneStats) list them. */
export class EngineStats {
  batches = 0;
  rows = 0;
  /** Rows that fed a chunk of a longer prompt or suffix: their outputs were not used. */
  chunks = 0;
  admissions = 0;
  evictions = 0;
  /** Summed over batches: launch → the runner's results; launch → its rows applied; inside the model, as the runner timed it. */
  busyMs = 0;
  batchMs = 0;
  modelMs = 0;
  /** Prefix cache, in tokens as vLLM counts them: context looked up at admission, and found cached. */
  prefixQueries = 0;
  prefixHits = 0;
  /** Not in the lane figures: entries dropped for room; wall ms in runner.step. */
  prefixEvictions = 0;
  runnerWallMs = 0;
}

/** A batch of the planned rows of `ready`, launched at `start` (clock ms): each row feeds the next `plan.feed[k]` tokens its cache has not seen. */
export function newBatch(id: number, plan: BatchPlan, ready: readonly LocalRequest[], start: number): Batch {
  const locals = plan.rows.map((i) => ready[i]);
  let cachedTokens = 0;
  for (const local of locals) {
    cachedTokens += local.cachedPrefix;
    local.cachedPrefix = 0;
  }
  const rows = locals.map((local, k) => ({
    cacheId: local.cacheId,
    requestId: local.id,
    tokens: local.tokens.slice(local.fed, local.fed + plan.feed[k]),
    position: local.fed,
    sampling: local.generated < local.spec.minTokens ? local.spec.samplingBelowMin : local.spec.sampling,
    wants: local.wants,
  }));
  const { phase, tokens } = plan;
  return { id, locals, rows, start, phase, tokens, wallMs: 0, applied: 0, resultAt: 0, modelMs: 0, cachedTokens, maskedRows: 0 };
}

/** The trace event of a batch that returned (or failed) at `end`. */
export function batchEvent(batch: Batch, model: string, end: number): TraceEvent {
  return {
    type: 'batch',
    model,
    batchId: batch.id,
    requestIds: batch.rows.map((r) => r.requestId),
    phase: batch.phase,
    tokens: batch.tokens,
    start: batch.start,
    end,
    ...(batch.cachedTokens > 0 ? { cachedTokens: batch.cachedTokens } : {}),
    ...(batch.maskedRows > 0 ? { maskedRows: batch.maskedRows } : {}),
    runMs: Math.max(0, batch.resultAt - batch.start),
    modelMs: batch.modelMs,
  };
}
