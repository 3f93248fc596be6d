// Counts what the throughput model needs from trace events: request-steps and hand-offs of chosen requests (P, C), and every batch's timing (L_i(b)).
import type { RoutingStats } from '../../shared/api/evaluate.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { fitLatencyProfile, markCycles } from '../control/throughput/index.ts';
import { TransitTimes } from './transitTimes.ts';

export interface BatchTiming {
  model: string;
  size: number;
  start: number;
  end: number;
}

/** Most batches kept for the latency fit (≈ the last minute of a busy server). */
const MAX_BATCHES = 20_000;

/**
 * The routing of the requests `mine` picks, counted as the live controller's estimator counts it
 * (runtime/control/routingEstimator.ts): P[i][j] = hand-offs i → j per request-step on i, the rest
 * stays; C[i][j] = 1 for a stay, the kept share for a switch. Batches of every request are kept,
 * since a step's cost depends on the whole batch, not on whose rows are in it.
 */
export class RoutingCounts {
  private readonly index: Map<string, number>;
  readonly rows: number[];
  readonly moves: number[][];
  readonly kept: number[][];
  readonly batches: BatchTiming[] = [];
  /** The same requests' time on no model (crossing threads), which the chain does not see. */
  readonly transit: TransitTimes;

  constructor(
    readonly models: readonly string[],
    private readonly mine: (requestId: string) => boolean,
  ) {
    this.index = new Map(models.map((m, i) => [m, i]));
    this.rows = models.map(() => 0);
    this.moves = models.map(() => models.map(() => 0));
    this.kept = models.map(() => models.map(() => 0));
    this.transit = new TransitTimes(mine);
  }

  readonly onEvent = (e: TraceEvent): void => {
    this.transit.onEvent(e);
    if (e.type === 'batch') {
      if (this.batches.length >= MAX_BATCHES) this.batches.splice(0, MAX_BATCHES / 4);
      this.batches.push({ model: e.model, size: e.requestIds.length, start: e.start, end: e.end });
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
  /** ms[k][b − 1] per model of `models`: launch to the model's next launch. */
  latency: number[][];
  /** Batches each model's fit rests on. */
  counts: Record<string, number>;
  /** Models with no batch at all (nothing to fit). */
  missing: string[];
}

/** How a fit reads each batch size's samples: their mean (absent) or a quantile, with the run's ramp and drain left out. */
export interface StepFit {
  quantile?: number;
}

/** A batch size with fewer samples than this is read between its neighbours: a quantile of three steps is one step. */
const MIN_SAMPLES = 5;
/** The share of a run's span at each end left out of a quantile fit: the ramp (first steps, prompts arriving at once) and the drain (fewer than c in flight). */
const EDGE_SHARE = 0.05;

/**
 * The batches outside a stretch's steady part: stretches are split where no batch launched for
 * NO_TRAFFIC_MS (an evaluation, then a deployed algorithm's live window minutes later), each losing
 * EDGE_SHARE of its span at either end (none under 200 batches, too few to spare).
 */
export function edgeBatches(batches: readonly BatchTiming[]): Set<number> {
  const order = batches.map((_, k) => k).sort((a, b) => batches[a].start - batches[b].start);
  const out = new Set<number>();
  const trim = (from: number, to: number) => {
    if (to - from < 200) return;
    const t0 = batches[order[from]].start;
    const edge = (batches[order[to - 1]].start - t0) * EDGE_SHARE;
    for (let k = from; k < to; k++) {
      const t = batches[order[k]].start;
      if (t < t0 + edge || t > batches[order[to - 1]].start - edge) out.add(order[k]);
    }
  };
  let from = 0;
  for (let k = 1; k <= order.length; k++) {
    if (k === order.length || batches[order[k]].start - batches[order[k - 1]].start > NO_TRAFFIC_MS) {
      trim(from, k);
      from = k;
    }
  }
  return out;
}

/** A model this long without a launch had no traffic at all: the gap is not part of a step. */
const NO_TRAFFIC_MS = 1000;

/**
 * Each model's step latency by batch size, each batch timed from its launch to its model's next
 * launch (markCycles): a batch's wall time alone leaves out the gaps between a model's batches
 * (results routed, hand-offs and new requests arriving, idle stretches while its rows are
 * elsewhere, the loop's turn), which on a small machine are a large share of the time
 * (docs/benchmarks.md, the `predict` suite). Prefill batches count too: a new request's prompt
 * is part of what serving the traffic costs a model. One profile per model, not split by
 * contention: a launch-to-launch time spans the other models' batches whether or not one ran at the
 * launch.
 *
 * `batches` are the predicted algorithm's own (its evaluation; for a deployed one also its serving);
 * `other` are other traffic's on the same server (the live requests over HTTP, whose entry work on
 * the main thread slows the model threads). A gap depends on the algorithm's routing (`me`'s small
 * model idles between draws, r-stitch's hardly), so another's batches give their wall time and take
 * the algorithm's own mean gap at their batch size (at any size where that size has none).
 */
export function fitStepLatency(
  batches: readonly BatchTiming[],
  models: readonly string[],
  maxBatch: number,
  other: readonly BatchTiming[] = [],
  fit: StepFit = {},
): StepLatency {
  const names = [...new Set([...models, ...batches.map((b) => b.model), ...other.map((b) => b.model)])];
  const idx = new Map(names.map((m, i) => [m, i]));
  const cycles = (list: readonly BatchTiming[]) =>
    markCycles(
      list.map((b) => ({ model: idx.get(b.model)!, batch: b.size, startMs: b.start, endMs: b.end })),
      NO_TRAFFIC_MS,
    );
  const edges = fit.quantile === undefined ? new Set<number>() : edgeBatches(batches);
  const own = cycles(batches).map((s, i) => (edges.has(i) ? null : s));
  const theirs = cycles(other);
  const counts: Record<string, number> = {};
  const latency: number[][] = [];
  const missing: string[] = [];
  for (const m of models) {
    const k = idx.get(m)!;
    const samples: { model: number; batch: number; ms: number }[] = [];
    /** Σ gap and count per batch size, and over all sizes, of the algorithm's own batches on this model. */
    const gaps = new Map<number, { n: number; ms: number }>();
    const all = { n: 0, ms: 0 };
    own.forEach((s, i) => {
      if (!s || s.model !== k) return;
      samples.push({ model: 0, batch: s.batch, ms: s.ms });
      const gap = s.ms - Math.max(1e-3, batches[i].end - batches[i].start);
      const g = gaps.get(s.batch) ?? { n: 0, ms: 0 };
      g.n++;
      g.ms += gap;
      gaps.set(s.batch, g);
      all.n++;
      all.ms += gap;
    });
    theirs.forEach((s, i) => {
      if (s.model !== k) return;
      const g = gaps.get(s.batch) ?? all;
      samples.push({ model: 0, batch: s.batch, ms: g.n > 0 ? Math.max(1e-3, other[i].end - other[i].start) + g.ms / g.n : s.ms });
    });
    counts[m] = samples.length;
    if (samples.length === 0) {
      missing.push(m);
      latency.push([]);
      continue;
    }
    latency.push(
      fitLatencyProfile(samples, {
        maxBatch,
        ...(fit.quantile === undefined ? {} : { quantile: fit.quantile, minSamples: MIN_SAMPLES, extrapolate: 'trend' as const }),
      }).table[0],
    );
  }
  return { latency, counts, missing };
}
