// A batch in flight on one engine, and the engine's running tallies.
import type { TraceEvent } from '../../shared/trace.ts';
import type { StepPhase, StepRow } from '../runner/modelRunner.ts';
import type { LocalRequest } from './localRequest.ts';
import type { BatchPlan } from './planBatch.ts';

export interface Batch {
  id: number;
  /** Index of the engine that ran it. */
  lane: number;
  locals: LocalRequest[];
  rows: StepRow[];
  start: number;
  phase: StepPhase;
  tokens: number;
  /** performance.now() at launch, and the wall ms the runner's own call took. */
  wall0: number;
  wallMs: number;
  /** Rows whose results are applied so far: the locals past them are still in the step. */
  applied: number;
  /** Clock ms when the runner's (first) results came back; model ms the runner reported for it. */
  resultAt: number;
  modelMs: number;
  /** Prompt tokens its rows did not feed because their caches started from the prefix cache. */
  cachedTokens: number;
  /** Rows a grammar masked. */
  maskedRows: number;
}

export class EngineStats {
  batches = 0;
  rows = 0;
  tokensFed = 0;
  /** Rows that fed a chunk of a longer prompt or suffix (chunked prefill): their outputs were not used. */
  chunks = 0;
  admissions = 0;
  evictions = 0;
  /** Prefix cache, in tokens: context looked up at admission, and found cached. */
  prefixQueries = 0;
  prefixHits = 0;
  prefixEvictions = 0;
  /** Launch → the runner's results, summed over batches. */
  busyMs = 0;
  /** Launch → the batch's rows applied (its outputs made), summed: `busyMs` plus routing them. */
  batchMs = 0;
  /** Inside the model (session.run and router heads), as the runner timed it, summed. */
  modelMs = 0;
  /** Wall ms spent inside runner.step (the model itself for real runners). */
  runnerWallMs = 0;
}

/** A batch of the planned rows, launched at `start` (clock ms): each row feeds the next `plan.feed[k]` tokens its cache has not seen. */
export function newBatch(id: number, lane: number, plan: BatchPlan, locals: LocalRequest[], start: number): Batch {
  const rows = locals.map((local, k) => ({
    cacheId: local.cacheId,
    requestId: local.id,
    tokens: local.tokens.slice(local.fed, local.fed + plan.feed[k]),
    position: local.fed,
    sampling: local.stepSampling,
    wants: local.wants,
  }));
  return {
    id,
    lane,
    locals,
    rows,
    start,
    phase: plan.phase,
    tokens: plan.tokens,
    wall0: performance.now(),
    wallMs: 0,
    applied: 0,
    resultAt: 0,
    modelMs: 0,
    cachedTokens: 0,
    maskedRows: 0,
  };
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
