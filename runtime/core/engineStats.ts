// An engine's tallies and figures: the counters a step adds to, the lane figures it reports (LaneStats), its batches' and handoffs' trace events.
import type { Handoff } from '../../shared/algorithm.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { LaneStats } from '../../shared/protocol/laneStats.ts';
import type { StepPhase, StepRow } from '../runner/modelRunner.ts';
import type { LocalRequest } from './localRequest.ts';

/** A step in flight (engineQueues' newBatch makes it): its requests and rows, and its figures. */
export interface Batch {
  readonly id: number;
  readonly locals: LocalRequest[];
  readonly rows: StepRow[];
  /** Rows whose results are applied so far: the locals past them are still in the step. */
  applied: number;
  readonly phase: StepPhase;
  readonly tokens: number;
  /** Clock ms at launch. */
  readonly start: number;
  /** Wall ms the runner's own call took. */
  wallMs: number;
  /** Clock ms when the runner's results came back; model ms the runner reported for it. */
  resultAt: number;
  modelMs: number;
  /** Prompt tokens its rows did not feed because their caches started from the prefix cache. */
  readonly cachedTokens: number;
  /** Rows a grammar masked. */
  maskedRows: number;
}

/** What the lane figures read of an engine (Engine). */
interface Lane {
  readonly name: string;
  readonly threshold: number;
  readonly readyCount: number;
  readonly executing: boolean;
  readonly inFlight: { readonly locals: readonly unknown[] } | null;
  readonly stats: EngineStats;
  readonly queues: { readonly waitingAdmission: number; evictable(): readonly unknown[]; readonly prefix: { readonly size: number } | null };
  readonly pool: { readonly usedBytes: number; readonly reservedTokenCount: number; readonly prefixTokenCount: number; readonly kvBytesPerToken: number };
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

  /** The runner's call for `batch` ended at `end`: with results (`ok`), which count as a batch and its rows, or failed. */
  landed(batch: Batch, end: number, ok: boolean): void {
    if (ok) {
      this.batches++;
      this.rows += batch.rows.length;
    }
    this.busyMs += end - batch.start;
  }

  /** The batch's rows are applied at `end`: counters, not trace events, give the benches' and /metrics' split (they cost nothing without a reader). */
  applied(batch: Batch, end: number): void {
    this.batchMs += end - batch.start;
    this.modelMs += batch.modelMs;
    this.runnerWallMs += batch.wallMs;
  }
}

/** The engine's figures for /admin/status, /metrics and the benches. */
export function laneStats(e: Lane): LaneStats {
  const { queues: q, pool } = e;
  const { prefixEvictions, runnerWallMs, ...counters } = e.stats;
  return {
    name: e.name,
    threshold: e.threshold,
    ready: e.readyCount,
    running: e.readyCount + (e.inFlight?.locals.length ?? 0),
    waitingAdmission: q.waitingAdmission,
    pendingReturn: q.evictable().length,
    executing: e.executing,
    kvBytes: pool.usedBytes,
    kvReservedBytes: pool.reservedTokenCount * pool.kvBytesPerToken,
    ...counters,
    prefixEntries: q.prefix?.size ?? 0,
    kvPrefixBytes: pool.prefixTokenCount * pool.kvBytesPerToken,
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

/** The trace event of a request leaving model `from` for `to` at output index `at`. */
export function handoffEvent(t: number, requestId: string, from: string, to: string, batchId: number, handoff: Handoff<unknown>, at: number): TraceEvent {
  return { type: 'handoff', t, requestId, from, to, batchId, tokens: handoff.tokens.length, kept: handoff.keep, at };
}
