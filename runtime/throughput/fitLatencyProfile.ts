// Fits per-model step latency L_i(b) from measured batches.
//
// Mean per size, made monotone, interpolated;
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

export function fitLatencyProfile(
  samples: readonly LatencySample[],
  opts: { maxBatch?: number | readonly number[] } = {},
): LatencyProfile {
  const sums = new Map<number, Map<number, { s: number; n: number }>>();
  let K = 0;
  for (const { model, batch, ms } of samples) {
    if (!Number.isInteger(model) || model < 0 || !Number.isInteger(batch) || batch < 1 || !(ms > 0)) {
      throw new ThroughputError('INVALID_INPUT', `bad latency sample ${JSON.stringify({ model, batch, ms })}`);
    }
    K = Math.max(K, model + 1);
    let m = sums.get(model);
    if (!m) sums.set(model, (m = new Map()));
    const e = m.get(batch) ?? { s: 0, n: 0 };
    e.s += ms;
    e.n++;
    m.set(batch, e);
  }
  const knots: { batch: number; ms: number }[][] = [];
  for (let i = 0; i < K; i++) {
    const m = sums.get(i);
    if (!m) throw new ThroughputError('NO_DATA', `no latency samples for model ${i}`, { model: i });
    const sizes = [...m.keys()].sort((a, b) => a - b);
    const means = sizes.map((b) => m.get(b)!.s / m.get(b)!.n);
    const fitted = isotonic(means, sizes.map((b) => m.get(b)!.n));
    knots.push(sizes.map((batch, k) => ({ batch, ms: fitted[k] })));
  }
  const at = (model: number, batch: number): number => {
    const k = knots[model];
    if (!k) throw new ThroughputError('INVALID_INPUT', `no latency profile for model ${model}`);
    const last = k[k.length - 1];
    if (k.length > 1 && batch > last.batch) {
      const prev = k[k.length - 2];
      return last.ms + ((last.ms - prev.ms) / (last.batch - prev.batch)) * (batch - last.batch);
    }
    return interpolate(k, batch);
  };
  const mb = opts.maxBatch;
  const table = knots.map((k, i) => {
    const B = mb === undefined ? k[k.length - 1].batch : typeof mb === 'number' ? mb : mb[i];
    return Array.from({ length: B }, (_, b) => at(i, b + 1));
  });
  return { knots, table, at };
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
export function fitContendedLatency(samples: readonly LatencySample[], opts: { maxBatch?: number | readonly number[] } = {}): ContendedProfiles {
  const seen = new Set(samples.map((s) => `${s.model}:${s.batch}:${!!s.contended}`));
  const pick = (contended: boolean) => samples.filter((s) => !!s.contended === contended || !seen.has(`${s.model}:${s.batch}:${contended}`));
  return { alone: fitLatencyProfile(pick(false), opts), contended: fitLatencyProfile(pick(true), opts) };
}
