// Estimates the throughput model's inputs from live trace events over a sliding window: P, C and L_i(b).
import type { TraceEvent } from '../../shared/trace.ts';
import { fitContendedLatency, markContended, type LatencySample } from './throughput/index.ts';

interface BatchSample {
  t: number;
  start: number;
  model: number;
  size: number;
  /** Request-steps it made: one per row (plus those taken from lookahead, in older traces). */
  rowSteps: number;
  ms: number;
  timed: boolean;
}

interface HandoffSample {
  t: number;
  from: number;
  to: number;
  kept: boolean;
}

export interface RoutingEstimate {
  /** P[i][j]: share of request-steps on i followed by work on j. */
  P: number[][];
  /** C[i][j]: committed tokens per i→j transition (stay: 1; switch: share kept). */
  C: number[][];
  /** Step ms by model and batch size (index b − 1), fitted monotone across sizes; NaN for idle models. */
  latency: number[][];
  /** The same for batches launched while another model was running (shared cores slow both). */
  contendedLatency: number[][];
  /** Request-steps seen per model: how much evidence each row of P rests on. */
  rows: number[];
  /** Mean number of requests in flight over the window. */
  meanActive: number;
}

/**
 * Routing drifts (the paper assumes it does not); a window of recent batches and handoffs tracks
 * it. Batches with a prefill row do not time the step cost (a whole prompt is not a step); extend
 * rows do, since a returning request's few catch-up tokens are part of what a step costs here.
 */
export class RoutingEstimator {
  private batches: BatchSample[] = [];
  private handoffs: HandoffSample[] = [];
  private activeSamples: { t: number; n: number }[] = [];
  private readonly index: Map<string, number>;
  /** Per model, when its latest batch ended. */
  private readonly lastEnd: number[];

  constructor(
    readonly models: readonly string[],
    readonly windowMs: number,
    readonly maxBatch: number,
  ) {
    this.index = new Map(models.map((m, i) => [m, i]));
    this.lastEnd = models.map(() => -Infinity);
  }

  onEvent(e: TraceEvent): void {
    if (e.type === 'batch') {
      const m = this.index.get(e.model);
      if (m === undefined) return;
      // In older traces a pipelined (remote) model's batch may have waited behind the one ahead:
      // its step cost starts when that one ended, not at launch.
      // …and a batch with lookahead (older traces) made several forward passes of its size.
      const ms = (e.end - Math.max(e.start, this.lastEnd[m])) / (e.steps ?? 1);
      this.lastEnd[m] = Math.max(this.lastEnd[m], e.end);
      this.batches.push({
        t: e.end,
        start: e.start,
        model: m,
        size: e.requestIds.length,
        rowSteps: e.requestIds.length + (e.aheadRows ?? 0),
        ms,
        timed: e.phase !== 'prefill',
      });
    } else if (e.type === 'handoff') {
      const from = this.index.get(e.from);
      const to = this.index.get(e.to);
      if (from !== undefined && to !== undefined) this.handoffs.push({ t: e.t, from, to, kept: e.kept });
    }
  }

  /** Records how many requests are in flight (sampled by the controller's tick). */
  sampleActive(t: number, n: number): void {
    this.activeSamples.push({ t, n });
  }

  private trim(now: number): void {
    const cut = now - this.windowMs;
    const keep = <T extends { t: number }>(xs: T[]) => {
      let i = 0;
      while (i < xs.length && xs[i].t < cut) i++;
      return i > 0 ? xs.slice(i) : xs;
    };
    this.batches = keep(this.batches);
    this.handoffs = keep(this.handoffs);
    this.activeSamples = keep(this.activeSamples);
  }

  /** The estimate over the last window, or null while some model has too few steps to estimate from. */
  estimate(now: number, minRows = 50): RoutingEstimate | null {
    this.trim(now);
    const K = this.models.length;
    const rows = new Array<number>(K).fill(0);
    const moves = Array.from({ length: K }, () => new Array<number>(K).fill(0));
    const kept = Array.from({ length: K }, () => new Array<number>(K).fill(0));
    const timed: LatencySample[] = [];
    // Every batch counts for overlap (a prefill occupies the cores too); only timed ones are fitted.
    const overlap = markContended(this.batches.map((b) => ({ model: b.model, batch: b.size, startMs: b.start, endMs: b.t })));
    this.batches.forEach((b, k) => {
      rows[b.model] += b.rowSteps;
      if (b.timed && b.ms > 0) timed.push({ model: b.model, batch: b.size, ms: b.ms, contended: overlap[k].contended });
    });
    for (const h of this.handoffs) {
      moves[h.from][h.to]++;
      if (h.kept) kept[h.from][h.to]++;
    }
    if (rows.some((r, i) => r < minRows && moves.some((row) => row[i] > 0))) return null;
    if (rows.every((r) => r === 0)) return null;
    const P = moves.map((row, i) => {
      const out = row.map((n) => (rows[i] > 0 ? n / rows[i] : 0));
      out[i] = Math.max(0, 1 - out.reduce((a, b, j) => (j === i ? a : a + b), 0));
      return out;
    });
    const C = moves.map((row, i) => row.map((n, j) => (i === j ? 1 : n > 0 ? kept[i][j] / n : 0)));
    // A model that carried traffic but never ran a timed batch cannot be modelled yet.
    const timedModels = new Set(timed.map((x) => x.model));
    if (rows.some((r, m) => r > 0 && !timedModels.has(m))) return null;
    const fits = this.models.map((_, m) => {
      if (!timedModels.has(m)) return null;
      const own = timed.filter((x) => x.model === m).map((x) => ({ ...x, model: 0 }));
      return fitContendedLatency(own, { maxBatch: this.maxBatch });
    });
    const idle = () => new Array<number>(this.maxBatch).fill(NaN);
    const latency = fits.map((f) => (f ? f.alone.table[0] : idle()));
    const contendedLatency = fits.map((f) => (f ? f.contended.table[0] : idle()));
    const meanActive = this.activeSamples.length ? this.activeSamples.reduce((a, s) => a + s.n, 0) / this.activeSamples.length : 0;
    return { P, C, latency, contendedLatency, rows, meanActive };
  }
}
