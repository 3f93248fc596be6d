// The seeded draw under min-p / top-k / top-p, exactly and without sorting the vocabulary: over a row's best candidates, else over its whole row by a histogram of float bits.
import type { SamplingParams } from './modelRunner.ts';

/**
 * The kept set of a draw is a prefix of the row ranked by weight (descending, ties by lower id):
 * min-p keeps the tokens whose weight is at least `minP` times the largest, top-k the first
 * `topK` of those, top-p the shortest prefix of those whose mass reaches `topP` of theirs. The
 * token is then drawn by inverse CDF over the kept set in id order, so the answer depends only on
 * the kept set and the uniform, never on how the set was found (candidates or the whole row).
 */
export function hasCuts(s: SamplingParams): boolean {
  return s.topP < 1 || s.topK > 0 || (s.minP ?? 0) > 0;
}

/**
 * The draw over a row's `n` best candidates (ranked as above: `w` descending, ties by lower id),
 * `w` their weights and `z` the whole row's weight sum; -1 when the kept set may reach past
 * them (the caller then draws over the whole row with drawExact). `V` is the vocabulary size.
 */
export function drawFromCandidates(ids: ArrayLike<number>, w: ArrayLike<number>, n: number, z: number, V: number, s: SamplingParams, u: number): number {
  const all = n >= V;
  // m: how many ranked tokens min-p and top-k keep; mass: theirs
  let m = V;
  const minP = s.minP ?? 0;
  if (minP > 0) {
    const c = minP * w[0];
    let k = 0;
    while (k < n && w[k] >= c) k++;
    if (k === n && !all) return -1;
    m = k;
  }
  if (s.topK > 0 && s.topK < m) m = s.topK;
  let mass = z;
  if (m < V) {
    if (m > n) return -1;
    mass = 0;
    for (let j = 0; j < m; j++) mass += w[j];
  }
  if (s.topP < 1) {
    const target = s.topP * mass;
    let acc = 0;
    let k = 0;
    const end = Math.min(m, n);
    while (k < end) {
      acc += w[k++];
      if (acc >= target) break;
    }
    if (acc < target && k < m) return -1;
    m = k;
    mass = acc;
  }
  if (m > n) return -1;
  // the prefix must end strictly above the candidates' last weight, or ties past them could belong to it
  if (!all && w[m - 1] === w[n - 1]) return -1;
  const kept = Array.from({ length: m }, (_, j) => j).sort((a, b) => ids[a] - ids[b]);
  const target = u * mass;
  let acc = 0;
  for (const j of kept) {
    acc += w[j];
    if (acc > target) return ids[j];
  }
  return ids[kept[kept.length - 1]];
}

/**
 * A histogram over the top 16 bits of non-negative float32 weights, zero between calls (each call
 * clears the buckets it used). Two lanes (even and odd ids), folded after the pass: neighbours
 * landing in one bucket then do not wait on each other's update (0.33 against 0.45 ms a row at V = 151,936).
 */
const LANE = 32768;
const MASS = new Float64Array(2 * LANE);
const COUNT = new Int32Array(2 * LANE);

/** Where a cut lands: the prefix is every token above (w, id) in rank, (w, id) included. */
interface Cut {
  w: number;
  id: number;
  count: number;
  mass: number;
}

/**
 * The draw with `u` over a whole row of non-negative weights `w` (float32: its bits rank it), `z`
 * their sum when known. No cut: inverse CDF in id order. Cuts: a histogram over the weights' top
 * 16 bits finds the bucket each cut falls in, and only that bucket's members are sorted.
 */
export function drawExact(w: Float32Array, s: SamplingParams, u: number, z?: number): number {
  const V = w.length;
  if (!hasCuts(s)) {
    let total = z ?? 0;
    if (z === undefined) for (let i = 0; i < V; i++) total += w[i];
    return inverseCdf(w, u * total);
  }
  const bits = new Int32Array(w.buffer, w.byteOffset, V);
  if (s.topK === 0 && !((s.minP ?? 0) > 0) && V >= BAND_MIN_V) {
    const t = drawTopPBand(w, bits, s.topP, u, z);
    if (t >= 0) {
      drawCounts.band++;
      return t;
    }
  }
  drawCounts.histogram++;
  // one pass with nothing but the bucket updates (tracking max / min / total here costs ~2x)
  const even = V & ~1;
  for (let i = 0; i < even; i += 2) {
    const a = bits[i] >>> 16;
    const b = (bits[i + 1] >>> 16) + LANE;
    MASS[a] += w[i];
    COUNT[a]++;
    MASS[b] += w[i + 1];
    COUNT[b]++;
  }
  if (even < V) {
    MASS[bits[even] >>> 16] += w[even];
    COUNT[bits[even] >>> 16]++;
  }
  let hi = LANE - 1;
  while (hi > 0 && COUNT[hi] === 0 && COUNT[hi + LANE] === 0) hi--;
  let lo = 0;
  while (lo < hi && COUNT[lo] === 0 && COUNT[lo + LANE] === 0) lo++;
  for (let k = lo; k <= hi; k++) {
    MASS[k] += MASS[k + LANE];
    COUNT[k] += COUNT[k + LANE];
  }
  MASS.fill(0, lo + LANE, hi + LANE + 1);
  COUNT.fill(0, lo + LANE, hi + LANE + 1);
  let total = z ?? 0;
  if (z === undefined) for (let k = lo; k <= hi; k++) total += MASS[k];
  try {
    let cut: Cut = { w: -1, id: V, count: V, mass: total };
    const minP = s.minP ?? 0;
    if (minP > 0) {
      let wmax = 0;
      for (let i = 0; i < V; i++) if (bits[i] >>> 16 === hi && w[i] > wmax) wmax = w[i];
      const c = minP * wmax;
      let count = 0;
      let mass = 0;
      let least = Infinity;
      for (let i = 0; i < V; i++) {
        const x = w[i];
        if (x >= c) {
          count++;
          mass += x;
          if (x < least) least = x;
        }
      }
      cut = { w: least, id: V, count, mass };
    }
    if (s.topK > 0 && s.topK < cut.count) cut = cutAt(w, bits, hi, lo, s.topK, Infinity);
    if (s.topP < 1) {
      const p = cutAt(w, bits, hi, lo, cut.count, s.topP * cut.mass);
      if (p.count < cut.count) cut = p;
    }
    return keptInverseCdf(w, u * cut.mass, cut);
  } finally {
    MASS.fill(0, lo, hi + 1);
    COUNT.fill(0, lo, hi + 1);
  }
}

/** How often drawExact answered under cuts by the sampled band and by the whole histogram (for tests and benches). */
export const drawCounts = { band: 0, histogram: 0 };

/** Rows at least this long try drawTopPBand first (below, the histogram pass costs little). */
export const BAND_MIN_V = 16384;
/** drawTopPBand samples every SAMPLE_STEP-th id. */
const SAMPLE_STEP = 8;
/** Ids per chunk of the band pass's running sums: the draw then scans one chunk, not the row. */
const CHUNK_BITS = 11;

/**
 * top_p alone over a long row, in one pass instead of the histogram's three: a sample of the row
 * (every SAMPLE_STEP-th id, in the same 16-bit buckets) guesses the buckets the cut falls between,
 * with a margin of 2 % of the mass (~9 standard deviations of the sample's error on a flat row);
 * one pass then sums the weights above that band (per chunk of ids as well) and lists the band's
 * members, and only those are ranked. -1 when the cut is not in the band (the caller's histogram
 * path then answers): the answer never rests on the sample, only the time does.
 */
function drawTopPBand(w: Float32Array, bits: Int32Array, topP: number, u: number, z: number | undefined): number {
  const V = w.length;
  let total = z ?? 0;
  if (z === undefined) for (let i = 0; i < V; i++) total += w[i];
  const target = topP * total;
  // the sample's buckets, in lane 1 of the histogram (cleared before returning)
  let hi = 0;
  let lo = LANE - 1;
  for (let i = 0; i < V; i += SAMPLE_STEP) {
    const k = bits[i] >>> 16;
    MASS[k + LANE] += w[i];
    if (k > hi) hi = k;
    if (k < lo) lo = k;
  }
  const margin = 0.02 * total;
  let kHi = -1;
  let kLo = -1;
  let acc = 0;
  for (let k = hi; k >= lo; k--) {
    const m = MASS[k + LANE] * SAMPLE_STEP;
    if (kHi < 0 && acc + m >= target - margin) kHi = k;
    acc += m;
    if (acc >= target + margin) {
      kLo = k;
      break;
    }
  }
  MASS.fill(0, lo + LANE, hi + LANE + 1);
  if (kHi < 0 || kLo < 0) return -1;
  // the exact pass: the mass above the band, by chunk, and the band's members in id order
  const chunks = new Float64Array((V >> CHUNK_BITS) + 1);
  const band: number[] = [];
  let above = 0;
  // chunk by chunk into locals: a running sum kept in memory would wait on itself at every id
  for (let c = 0; c < chunks.length; c++) {
    const end = Math.min(V, (c + 1) << CHUNK_BITS);
    let s0 = 0;
    let s1 = 0;
    let i = c << CHUNK_BITS;
    for (; i + 1 < end; i += 2) {
      const a = bits[i] >>> 16;
      const b = bits[i + 1] >>> 16;
      if (a > kHi) s0 += w[i];
      else if (a >= kLo) band.push(i);
      if (b > kHi) s1 += w[i + 1];
      else if (b >= kLo) band.push(i + 1);
    }
    if (i < end) {
      const a = bits[i] >>> 16;
      if (a > kHi) s0 += w[i];
      else if (a >= kLo) band.push(i);
    }
    chunks[c] = s0 + s1;
    above += s0 + s1;
  }
  if (above >= target) return -1;
  // rank the band: its buckets from the top, then the members of the bucket the cut falls in
  for (const i of band) MASS[bits[i] >>> 16] += w[i];
  let mass = above;
  let kc = kHi;
  for (; kc >= kLo; kc--) {
    if (mass + MASS[kc] >= target) break;
    mass += MASS[kc];
  }
  MASS.fill(0, kLo, kHi + 1);
  if (kc < kLo) return -1;
  const members = band.filter((i) => bits[i] >>> 16 === kc).sort((a, b) => w[b] - w[a] || a - b);
  let cw = 0;
  let ci = 0;
  for (const i of members) {
    mass += w[i];
    cw = w[i];
    ci = i;
    if (mass >= target) break;
  }
  // the draw in id order over the kept set: find the chunk by the running sums, then scan it
  const kept = (i: number): boolean => {
    const k = bits[i] >>> 16;
    return k > kc || (k === kc && (w[i] > cw || (w[i] === cw && i <= ci)));
  };
  for (const i of band) if (kept(i)) chunks[i >> CHUNK_BITS] += w[i];
  const t = u * mass;
  let base = 0;
  let c = 0;
  while (c < chunks.length - 1 && base + chunks[c] <= t) base += chunks[c++];
  let last = -1;
  let run = base;
  for (let i = c << CHUNK_BITS; i < V; i++) {
    if (bits[i] >>> 16 < kLo || !kept(i) || w[i] <= 0) continue;
    run += w[i];
    last = i;
    if (run > t) return i;
  }
  return last;
}

/** inverseCdf over the kept prefix: weights above the cut's, and its ties up to its id (a separate loop: a predicate call per id costs ~4x). */
function keptInverseCdf(w: Float32Array, target: number, cut: Cut): number {
  const cw = cut.w;
  const ci = cut.id;
  let acc = 0;
  let last = 0;
  for (let i = 0; i < w.length; i++) {
    const x = w[i];
    if (x > cw || (x === cw && i <= ci)) {
      if (x <= 0) continue;
      acc += x;
      last = i;
      if (acc > target) return i;
    }
  }
  return last;
}

/** The first i (id order) where the running sum of the weights passes `target` (the last positive one on rounding). */
function inverseCdf(w: Float32Array, target: number): number {
  let acc = 0;
  let last = 0;
  for (let i = 0; i < w.length; i++) {
    const x = w[i];
    if (x <= 0) continue;
    acc += x;
    last = i;
    if (acc > target) return i;
  }
  return last;
}

/** The shortest ranked prefix holding `maxCount` tokens or reaching `maxMass`, whichever comes first. */
function cutAt(w: Float32Array, bits: Int32Array, hi: number, lo: number, maxCount: number, maxMass: number): Cut {
  let count = 0;
  let mass = 0;
  let k = hi;
  for (; k > lo; k--) {
    if (count + COUNT[k] >= maxCount || mass + MASS[k] >= maxMass) break;
    count += COUNT[k];
    mass += MASS[k];
  }
  const members: number[] = [];
  for (let i = 0; i < w.length; i++) if (bits[i] >>> 16 === k) members.push(i);
  members.sort((a, b) => w[b] - w[a] || a - b);
  let last = members[0];
  for (const i of members) {
    count++;
    mass += w[i];
    last = i;
    if (count >= maxCount || mass >= maxMass) break;
  }
  return { w: w[last], id: last, count, mass };
}
