// Counts over a time range: committed tokens/s, handoffs/s, mean batch size and idle time per model.
import type { EventStore } from './eventStore.ts';
import { batchRange, pointRange } from './windowRange.ts';

export interface ModelStats {
  model: string;
  /** Batches starting in the range. */
  batches: number;
  meanBatchSize: number;
  /** Rows sampled by batches ending in the range (one token per row). */
  sampled: number;
  busyMs: number;
  idleMs: number;
  idleFrac: number;
}

export interface RangeStats {
  t0: number;
  t1: number;
  durationMs: number;
  sampled: number;
  /** Handoffs that discarded the just-sampled token. */
  discarded: number;
  /** Sampled minus discarded: tokens that stay in the output (discarded tokens never count toward throughput). */
  committed: number;
  committedPerSec: number;
  handoffs: number;
  handoffsPerSec: number;
  completedRequests: number;
  models: ModelStats[];
}

export function rangeStats(store: EventStore, t0: number, t1: number): RangeStats {
  const dur = Math.max(1e-9, t1 - t0);
  const n = store.lanes.length;
  const batches = new Array<number>(n).fill(0);
  const sizeSum = new Array<number>(n).fill(0);
  const sampled = new Array<number>(n).fill(0);
  const intervals: number[][] = Array.from({ length: n }, () => []);
  const b = store.batches;
  const c = b.cols;
  const [i0, i1] = batchRange(store, t0, t1);
  for (let i = i0; i < i1; i++) {
    const p = b.phys(i);
    const s = c.start[p];
    const e = c.end[p];
    if (e < t0 || s > t1) continue;
    const lane = c.lane[p];
    if (s >= t0 && s < t1) {
      batches[lane]++;
      sizeSum[lane] += c.size[p];
    }
    if (e >= t0 && e < t1) sampled[lane] += c.size[p];
    intervals[lane].push(Math.max(s, t0), Math.min(e, t1));
  }
  const h = store.handoffs;
  let handoffs = 0;
  let discarded = 0;
  const [h0, h1] = pointRange(store, h, t0, t1);
  for (let i = h0; i < h1; i++) {
    const p = h.phys(i);
    const t = h.cols.t[p];
    if (t < t0 || t >= t1) continue;
    handoffs++;
    if (h.cols.kept[p] === 0) discarded++;
  }
  let completedRequests = 0;
  for (const r of store.requests.values()) if (r.end && r.end.t >= t0 && r.end.t < t1) completedRequests++;
  const models = store.lanes.map((model, lane) => {
    const busyMs = unionLength(intervals[lane]);
    return {
      model,
      batches: batches[lane],
      meanBatchSize: batches[lane] ? sizeSum[lane] / batches[lane] : 0,
      sampled: sampled[lane],
      busyMs,
      idleMs: Math.max(0, dur - busyMs),
      idleFrac: Math.max(0, dur - busyMs) / dur,
    };
  });
  const totalSampled = sampled.reduce((a, x) => a + x, 0);
  const committed = totalSampled - discarded;
  return {
    t0,
    t1,
    durationMs: dur,
    sampled: totalSampled,
    discarded,
    committed,
    committedPerSec: (committed * 1000) / dur,
    handoffs,
    handoffsPerSec: (handoffs * 1000) / dur,
    completedRequests,
    models,
  };
}

/** Total length covered by [start, end] pairs (flat array), overlaps counted once. */
export function unionLength(flat: number[]): number {
  const k = flat.length / 2;
  const order = Array.from({ length: k }, (_, i) => i).sort((a, b) => flat[2 * a] - flat[2 * b]);
  let total = 0;
  let curS = -Infinity;
  let curE = -Infinity;
  for (const i of order) {
    const s = flat[2 * i];
    const e = flat[2 * i + 1];
    if (s > curE) {
      if (curE > curS) total += curE - curS;
      curS = s;
      curE = e;
    } else if (e > curE) curE = e;
  }
  if (curE > curS) total += curE - curS;
  return total;
}
