// Counts what the throughput model needs from trace events: request-steps and hand-offs of chosen requests (P, C), and every batch's timing (L_i(b)).
import type { RoutingStats } from '../../shared/api/evaluate.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { fitContendedLatency, markContended } from '../throughput/index.ts';

export interface BatchTiming {
  model: string;
  size: number;
  start: number;
  end: number;
  /** Prefill batches feed whole prompts: they occupy the cores but do not time a step. */
  timed: boolean;
}

/** Most batches kept for the latency fit (≈ the last minute of a busy server). */
const MAX_BATCHES = 20_000;

/**
 * The routing of the requests `mine` picks, counted as the live controller's estimator counts it
 * (runtime/scheduler/routingEstimator.ts): P[i][j] = hand-offs i → j per request-step on i, the rest
 * stays; C[i][j] = 1 for a stay, the kept share for a switch. Batches of every request are kept,
 * since a step's cost depends on the whole batch, not on whose rows are in it.
 */
export class RoutingCounts {
  private readonly index: Map<string, number>;
  readonly rows: number[];
  readonly moves: number[][];
  readonly kept: number[][];
  readonly batches: BatchTiming[] = [];

  constructor(
    readonly models: readonly string[],
    private readonly mine: (requestId: string) => boolean,
  ) {
    this.index = new Map(models.map((m, i) => [m, i]));
    this.rows = models.map(() => 0);
    this.moves = models.map(() => models.map(() => 0));
    this.kept = models.map(() => models.map(() => 0));
  }

  readonly onEvent = (e: TraceEvent): void => {
    if (e.type === 'batch') {
      if (this.batches.length >= MAX_BATCHES) this.batches.splice(0, MAX_BATCHES / 4);
      this.batches.push({ model: e.model, size: e.requestIds.length, start: e.start, end: e.end, timed: e.phase !== 'prefill' });
      const m = this.index.get(e.model);
      if (m !== undefined) for (const id of e.requestIds) if (this.mine(id)) this.rows[m]++;
    } else if (e.type === 'handoff' && this.mine(e.requestId)) {
      const from = this.index.get(e.from);
      const to = this.index.get(e.to);
      if (from === undefined || to === undefined) return;
      this.moves[from][to]++;
      if (e.kept) this.kept[from][to]++;
    }
  };

  routing(): RoutingStats {
    const P = this.moves.map((row, i) => {
      const out = row.map((n) => (this.rows[i] > 0 ? n / this.rows[i] : 0));
      out[i] = Math.max(0, 1 - out.reduce((a, b, j) => (j === i ? a : a + b), 0));
      return out;
    });
    const C = this.moves.map((row, i) => row.map((n, j) => (i === j ? 1 : n > 0 ? this.kept[i][j] / n : 0)));
    return { models: [...this.models], P, C, steps: [...this.rows] };
  }
}

export interface StepLatency {
  /** ms[k][b − 1] per model of `models`, alone and launched beside another model's batch. */
  latency: number[][];
  contended: number[][];
  /** Timed batches each model's fit rests on. */
  counts: Record<string, number>;
  /** Models with no timed batch at all (nothing to fit). */
  missing: string[];
}

/** Each model's step latency by batch size from measured batch wall times, split by contention as the live controller fits it. */
export function fitStepLatency(batches: readonly BatchTiming[], models: readonly string[], maxBatch: number): StepLatency {
  const names = [...new Set([...models, ...batches.map((b) => b.model)])];
  const idx = new Map(names.map((m, i) => [m, i]));
  // every batch counts for overlap (a prefill occupies the cores too); only timed ones are fitted
  const marked = markContended(batches.map((b) => ({ model: idx.get(b.model)!, batch: b.size, startMs: b.start, endMs: b.end })));
  const counts: Record<string, number> = {};
  const latency: number[][] = [];
  const contended: number[][] = [];
  const missing: string[] = [];
  for (const m of models) {
    const k = idx.get(m)!;
    const own = marked.filter((s, i) => s.model === k && batches[i].timed && s.ms > 0).map((s) => ({ ...s, model: 0 }));
    counts[m] = own.length;
    if (own.length === 0) {
      missing.push(m);
      latency.push([]);
      contended.push([]);
      continue;
    }
    const fit = fitContendedLatency(own, { maxBatch });
    latency.push(fit.alone.table[0]);
    contended.push(fit.contended.table[0]);
  }
  return { latency, contended, counts, missing };
}
