// Fits per-model step latency L_i(b) from measured batches.
//
// Mean (or a quantile) per size, made monotone, interpolated;
// optionally split by whether another model was running when the batch launched.
import { ThroughputError } from './ThroughputError.ts';

export interface LatencySample {
  /** 0-based model index. */
  model: number;
  batch: number;
  ms: number;
  /** Another model had a batch running when this one launched (see markContended). */
  contended?: boolean;
}

export interface LatencyProfile {
  /** Per model, the fitted (batch, ms) knots, ascending and non-decreasing in ms. */
  knots: { batch: number; ms: number }[][];
  /** ms[model][batch − 1] for batch = 1..maxBatch[model] (when maxBatch was given). */
  table: number[][];
  /** L_i(b): linear between knots, flat below the first, extended with the last slope above the last. */
  at: (model: number, batch: number) => number;
}

/** Pool-adjacent-violators: the weighted least-squares non-decreasing fit, because noisy means can dip. */
function isotonic(ms: number[], w: number[]): number[] {
  const blocks: { v: number; w: number; n: number }[] = [];
  ms.forEach((v, i) => {
    blocks.push({ v, w: w[i], n: 1 });
    while (blocks.length > 1 && blocks[blocks.length - 2].v > blocks[blocks.length - 1].v) {
      const b = blocks.pop()!;
      const a = blocks.pop()!;
      blocks.push({ v: (a.v * a.w + b.v * b.w) / (a.w + b.w), w: a.w + b.w, n: a.n + b.n });
    }
  });
  return blocks.flatMap((b) => new Array<number>(b.n).fill(b.v));
}

function interpolate(knots: { batch: number; ms: number }[], b: number): number {
  const n = knots.length;
  if (n === 1 || b <= knots[0].batch) return knots[0].ms;
  let k = 1;
  while (k < n - 1 && knots[k].batch < b) k++;
  const a = knots[k - 1];
  const c = knots[k];
  return a.ms + ((c.ms - a.ms) * (b - a.batch)) / (c.batch - a.batch);
}

/** The q-quantile of ascending `xs` (linear between order statistics, as numpy's default). */
export function quantileOf(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const h = (xs.length - 1) * q;
  const lo = Math.floor(h);
  return lo + 1 < xs.length ? xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo]) : xs[lo];
}

/** Weighted least-squares slope of ms over batch through the knots: the trend above the last one, less at the mercy of its last two. */
function trendSlope(k: readonly { batch: number; ms: number; n: number }[]): number {
  const w = k.reduce((a, x) => a + x.n, 0);
  const mb = k.reduce((a, x) => a + x.n * x.batch, 0) / w;
  const mm = k.reduce((a, x) => a + x.n * x.ms, 0) / w;
  const sxx = k.reduce((a, x) => a + x.n * (x.batch - mb) ** 2, 0);
  const sxy = k.reduce((a, x) => a + x.n * (x.batch - mb) * (x.ms - mm), 0);
  return sxx > 0 ? Math.max(0, sxy / sxx) : 0;
}

export interface FitOptions {
  maxBatch?: number | readonly number[];
  /**
   * The figure per batch size: the mean (default), or a quantile in [0, 1] of the size's samples: a
   * median is not moved by the rare step another process on the machine stalls, and the quartiles
   * give the spread a prediction carries.
   */
  quantile?: number;
  /** Sizes with fewer samples are left to their neighbours' interpolation (while any size has this many). Default 1. */
  minSamples?: number;
  /** Above the last knot: the last two knots' slope ('last', default) or the weighted trend through all of them ('trend'). */
  extrapolate?: 'last' | 'trend';
}

export function fitLatencyProfile(samples: readonly LatencySample[], opts: FitOptions = {}): LatencyProfile {
  const q = opts.quantile;
  if (q !== undefined && !(q >= 0 && q <= 1)) throw new ThroughputError('INVALID_INPUT', `quantile must be in [0, 1], got ${q}`);
  const bySize = new Map<number, Map<number, number[]>>();
  let K = 0;
  for (const { model, batch, ms } of samples) {
    if (!Number.isInteger(model) || model < 0 || !Number.isInteger(batch) || batch < 1 || !(ms > 0)) {
      throw new ThroughputError('INVALID_INPUT', `bad latency sample ${JSON.stringify({ model, batch, ms })}`);
    }
    K = Math.max(K, model + 1);
    let m = bySize.get(model);
    if (!m) bySize.set(model, (m = new Map()));
    const e = m.get(batch);
    if (e) e.push(ms);
    else m.set(batch, [ms]);
  }
  const knots: { batch: number; ms: number; n: number }[][] = [];
  for (let i = 0; i < K; i++) {
    const m = bySize.get(i);
    if (!m) throw new ThroughputError('NO_DATA', `no latency samples for model ${i}`, { model: i });
    let sizes = [...m.keys()].sort((a, b) => a - b);
    const enough = sizes.filter((b) => m.get(b)!.length >= (opts.minSamples ?? 1));
    if (enough.length > 0) sizes = enough;
    const figure = (xs: number[]) =>
      q === undefined
        ? xs.reduce((a, x) => a + x, 0) / xs.length
        : quantileOf(
            [...xs].sort((a, b) => a - b),
            q,
          );
    const fitted = isotonic(
      sizes.map((b) => figure(m.get(b)!)),
      sizes.map((b) => m.get(b)!.length),
    );
    knots.push(sizes.map((batch, k) => ({ batch, ms: fitted[k], n: m.get(batch)!.length })));
  }
  const slopes = knots.map((k) =>
    k.length < 2
      ? 0
      : opts.extrapolate === 'trend'
        ? trendSlope(k)
        : (k[k.length - 1].ms - k[k.length - 2].ms) / (k[k.length - 1].batch - k[k.length - 2].batch),
  );
  const at = (model: number, batch: number): number => {
    const k = knots[model];
    if (!k) throw new ThroughputError('INVALID_INPUT', `no latency profile for model ${model}`);
    const last = k[k.length - 1];
    if (k.length > 1 && batch > last.batch) return last.ms + slopes[model] * (batch - last.batch);
    return interpolate(k, batch);
  };
  const mb = opts.maxBatch;
  const table = knots.map((k, i) => {
    const B = mb === undefined ? k[k.length - 1].batch : typeof mb === 'number' ? mb : mb[i];
    return Array.from({ length: B }, (_, b) => at(i, b + 1));
  });
  return { knots: knots.map((k) => k.map(({ batch, ms }) => ({ batch, ms }))), table, at };
}

/** One measured batch on the wall clock, as the trace records it. */
export interface TimedBatch {
  model: number;
  batch: number;
  startMs: number;
  endMs: number;
}

/**
 * Samples (in input order) tagged with the chain's contention rule: a batch is contended when a
 * batch of another model was running at its launch (started at or before it, not yet ended).
 */
export function markContended(batches: readonly TimedBatch[]): LatencySample[] {
  const order = batches.map((_, k) => k).sort((a, b) => batches[a].startMs - batches[b].startMs);
  const out = new Array<LatencySample>(batches.length);
  // Per model, the latest end among its batches started so far: one model runs one batch at a time
  // (or a short pipeline), so that end decides whether it is still running.
  const lastEnd = new Map<number, number>();
  // Launches at one instant see each other, as in the chain (it picks durations after all of them).
  for (let g = 0; g < order.length; ) {
    let h = g;
    while (h < order.length && batches[order[h]].startMs === batches[order[g]].startMs) h++;
    const group = order.slice(g, h);
    for (const k of group) lastEnd.set(batches[k].model, Math.max(lastEnd.get(batches[k].model) ?? -Infinity, batches[k].endMs));
    for (const k of group) {
      const x = batches[k];
      let contended = false;
      for (const [model, end] of lastEnd) if (model !== x.model && end > x.startMs) contended = true;
      out[k] = { model: x.model, batch: x.batch, ms: Math.max(1e-3, x.endMs - x.startMs), contended };
    }
    g = h;
  }
  return out;
}

/**
 * Samples tagged as markContended tags them, each timed from its launch to its model's next launch
 * (its wall time plus the gap after it, up to `maxGapMs`): the gap is what a step costs beyond the
 * batch itself (routing the results, waiting for handed-off rows and new requests to arrive, the
 * loop's turn), which the chain otherwise never sees. A longer gap means the model had no work at
 * all (the runtime launches by its max-wait deadline whatever the queue): a pause in traffic, not
 * part of any step, so the batch counts its wall time alone (cut at `maxGapMs`, every pause added
 * `maxGapMs` to one step and moved a size's mean by milliseconds).
 */
export function markCycles(batches: readonly TimedBatch[], maxGapMs: number): LatencySample[] {
  const out = markContended(batches);
  const byModel = new Map<number, number[]>();
  batches.forEach((b, k) => {
    const list = byModel.get(b.model);
    if (list) list.push(k);
    else byModel.set(b.model, [k]);
  });
  for (const list of byModel.values()) {
    list.sort((a, b) => batches[a].startMs - batches[b].startMs);
    list.forEach((k, n) => {
      const b = batches[k];
      const next = n + 1 < list.length ? batches[list[n + 1]] : undefined;
      const gap = next ? Math.max(0, next.startMs - b.endMs) : 0;
      out[k] = { ...out[k], ms: Math.max(1e-3, b.endMs - b.startMs + (gap < maxGapMs ? gap : 0)) };
    });
  }
  return out;
}

export interface ContendedProfiles {
  /** Batches launched with no other model running. */
  alone: LatencyProfile;
  /** Batches launched while another model ran. */
  contended: LatencyProfile;
}

/**
 * The two profiles the chain takes as latency and contendedLatency. Where a class never saw a
 * (model, batch size) pair, the other class's samples of that pair stand in, so one class's gaps are
 * filled by measurement rather than extrapolation, and a model seen only one way (a lone model never
 * overlaps) gets the same profile for both: the fit never invents a slowdown.
 */
export function fitContendedLatency(samples: readonly LatencySample[], opts: FitOptions = {}): ContendedProfiles {
  const seen = new Set(samples.map((s) => `${s.model}:${s.batch}:${!!s.contended}`));
  const pick = (contended: boolean) => samples.filter((s) => !!s.contended === contended || !seen.has(`${s.model}:${s.batch}:${contended}`));
  return { alone: fitLatencyProfile(pick(false), opts), contended: fitLatencyProfile(pick(true), opts) };
}
