// A grammar-masked row in JavaScript: the bitmask's checks and allowed ids, and the row's signals and draw over the allowed tokens only.
import { applyPenalties, bannedIds, drawUniform, rowSignals, SAMPLE_STREAM, type AnalyzeOptions, type RowAnalysis } from './sampling.ts';
import { drawExact, drawFromCandidates, hasCuts } from './nucleus.ts';

/** Words of a mask over a vocabulary of V tokens. */
export const maskWords = (V: number): number => Math.ceil(V / 32);

/** Whether token t is allowed by the mask. */
export const allows = (mask: Int32Array, t: number): boolean => ((mask[t >>> 5] >>> (t & 31)) & 1) === 1;

/** A mask's problem for a vocabulary of V tokens (wrong length, nothing allowed), or undefined when it is usable. */
export function maskProblem(mask: Int32Array, V: number): string | undefined {
  const W = maskWords(V);
  if (mask.length !== W) return `its grammar mask has ${mask.length} words, not ceil(${V} / 32) = ${W}`;
  const tail = V & 31;
  for (let w = 0; w < W; w++) {
    const word = w === W - 1 && tail !== 0 ? mask[w] & ((1 << tail) - 1) : mask[w];
    if (word !== 0) return undefined;
  }
  return 'its grammar mask allows no token';
}

/** The allowed ids below V, ascending. */
export function allowedIds(mask: Int32Array, V: number): Int32Array {
  let n = 0;
  const W = Math.min(mask.length, maskWords(V));
  for (let w = 0; w < W; w++) n += popcount(mask[w]);
  const ids = new Int32Array(n);
  let j = 0;
  for (let w = 0; w < W; w++) {
    let word = mask[w];
    while (word !== 0) {
      const low = word & -word;
      const t = (w << 5) + 31 - Math.clz32(low);
      if (t < V) ids[j++] = t;
      word ^= low;
    }
  }
  return j === n ? ids : ids.subarray(0, j);
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/**
 * Each byte's eight bits as eight bool bytes 0 / 1 (little-endian), held as the double with those
 * bits: fillAllowed writes eight bools at once. None is a NaN (the top byte is 0 or 1), so copying
 * them keeps their bits.
 */
const BYTE_BOOLS = (() => {
  const bytes = new Uint8Array(256 * 8);
  for (let v = 0; v < 256; v++) for (let k = 0; k < 8; k++) bytes[v * 8 + k] = (v >> k) & 1;
  return new Float64Array(bytes.buffer);
})();
const littleEndian = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;

/**
 * The mask as V bools (1: allowed) into `out` from `offset`, for the graph's masked group
 * (graph/signalHead.ts SIG.allowed); returns how many tokens it allows. Eight bools per write
 * where `out` is 8-aligned there (V = 151,936: 0.03 ms a row against ~0.3 bit by bit).
 */
export function fillAllowed(out: Uint8Array, offset: number, mask: Int32Array, V: number): number {
  let count = 0;
  let t = 0;
  if (littleEndian && (out.byteOffset + offset) % 8 === 0) {
    const eights = new Float64Array(out.buffer, out.byteOffset + offset, V >>> 3);
    const whole = V >>> 5;
    for (let w = 0; w < whole; w++) {
      const word = mask[w];
      const q = w << 2;
      if (word !== 0) count += popcount(word);
      eights[q] = BYTE_BOOLS[word & 255];
      eights[q + 1] = BYTE_BOOLS[(word >>> 8) & 255];
      eights[q + 2] = BYTE_BOOLS[(word >>> 16) & 255];
      eights[q + 3] = BYTE_BOOLS[word >>> 24];
    }
    t = whole << 5;
  }
  for (; t < V; t++) {
    const bit = (mask[t >>> 5] >>> (t & 31)) & 1;
    out[offset + t] = bit;
    count += bit;
  }
  return count;
}

/** Whether the mask allows a token outside `banned` (a banned EOS is left out of a masked draw only then). */
export function allowsBesides(mask: Int32Array, banned: readonly number[], V: number): boolean {
  const W = Math.min(mask.length, maskWords(V));
  for (let w = 0; w < W; w++) {
    let word = mask[w];
    while (word !== 0) {
      const low = word & -word;
      const t = (w << 5) + 31 - Math.clz32(low);
      if (t < V && !banned.includes(t)) return true;
      word ^= low;
    }
  }
  return false;
}

/** The last allowed token at or below t (the first allowed one when none is): where a draw rounded onto a refused id belongs. */
export function allowedAtOrBelow(mask: Int32Array, t: number): number {
  for (let i = t; i >= 0; i--) if (allows(mask, i)) return i;
  return allowedIds(mask, mask.length * 32)[0];
}

/** Below this many allowed tokens a draw under cuts ranks them (a sort); above, it goes through drawExact over a whole row. */
const RANKED_MAX = 4096;

/**
 * Signals and the sampled token of a masked row from its whole row of logits.
 *
 * The signals decision: a masked row's entropy, maxProb, margin, tokenProb, topIds / topProbs (and
 * the logprobs the server builds from them, and router heads' top logits) describe the MASKED
 * distribution, the model's softmax renormalised over the allowed tokens. A routing algorithm asks
 * "is this model unsure about the next token"; under a grammar the only candidates are the allowed
 * ones, so where the grammar allows one token the model is certain (entropy 0, maxProb 1) however
 * spread its raw distribution is. Entropy stays normalised by log V, as for an unmasked row, so
 * thresholds mean the same on both. topIds lists allowed tokens only (fewer than asked when the
 * mask allows fewer). Penalties still shape the draw only, as on unmasked rows.
 *
 * A banned EOS (min_tokens) is left out of the draw unless the grammar allows nothing else: then the
 * grammar wins, as ending is the only valid continuation.
 */
export function analyzeMasked(logits: Float32Array, mask: Int32Array, opts: AnalyzeOptions): RowAnalysis {
  const V = logits.length;
  const ids = allowedIds(mask, V);
  const n = ids.length;
  if (n === 0) throw new Error(`analyzeMasked: the grammar mask allows no token`);
  let max = -Infinity;
  for (let j = 0; j < n; j++) if (logits[ids[j]] > max) max = logits[ids[j]];
  let z = 0;
  let zd = 0;
  for (let j = 0; j < n; j++) {
    const d = logits[ids[j]] - max;
    const e = Math.exp(d);
    z += e;
    zd += e * d;
  }
  const lse = max + Math.log(z);
  const top = topAmong(logits, ids, Math.max(2, opts.topK, opts.topLogitsK ?? 0));
  const token = drawMasked(logits, ids, opts);
  return rowSignals(
    top.map((i) => logits[i]),
    top,
    lse,
    Math.log(z) - zd / z,
    V,
    logits[token],
    token,
    opts,
  );
}

/** The k ids of `ids` (ascending) with the largest x, best first, ties by lower id. */
function topAmong(x: Float32Array, ids: Int32Array, k: number): number[] {
  k = Math.min(k, ids.length);
  const out: number[] = [];
  for (let j = 0; j < ids.length; j++) {
    const i = ids[j];
    const v = x[i];
    if (out.length === k && v <= x[out[k - 1]]) continue;
    let p = out.length < k ? out.length : k - 1;
    if (out.length < k) out.push(i);
    while (p > 0 && x[out[p - 1]] < v) {
      out[p] = out[p - 1];
      p--;
    }
    out[p] = i;
  }
  return out;
}

/** The draw over the allowed ids: penalties on a copy, banned ids out (unless nothing would remain), then greedy or the seeded draw. */
function drawMasked(logits: Float32Array, allowed: Int32Array, opts: AnalyzeOptions): number {
  const s = opts.sampling;
  let x = logits;
  if (s.penalties) {
    x = Float32Array.from(logits);
    applyPenalties(x, s.penalties, opts);
  }
  const banned = bannedIds(opts, x.length);
  let ids = allowed;
  if (banned.length > 0) {
    const kept = allowed.filter((t) => !banned.includes(t));
    if (kept.length > 0) ids = kept;
  }
  const n = ids.length;
  let max = -Infinity;
  let best = ids[0];
  for (let j = 0; j < n; j++) {
    if (x[ids[j]] > max) {
      max = x[ids[j]];
      best = ids[j];
    }
  }
  if (!(s.temperature > 0) || n === 1) return best;
  const u = drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM);
  const invT = 1 / s.temperature;
  const w = new Float32Array(n);
  let z = 0;
  for (let j = 0; j < n; j++) z += w[j] = Math.exp((x[ids[j]] - max) * invT);
  if (!hasCuts(s)) {
    // inverse CDF in id order over the allowed ids, as drawExact over a row whose other weights are 0
    const target = u * z;
    let acc = 0;
    let last = best;
    for (let j = 0; j < n; j++) {
      if (!(w[j] > 0)) continue;
      acc += w[j];
      last = ids[j];
      if (acc > target) return last;
    }
    return last;
  }
  if (n <= RANKED_MAX) {
    // every allowed token is a candidate: ranked by weight, ties by lower id, the draw is exact over them
    const order = Array.from({ length: n }, (_, j) => j).sort((a, b) => w[b] - w[a] || a - b);
    return drawFromCandidates(
      order.map((j) => ids[j]),
      order.map((j) => w[j]),
      n,
      z,
      n,
      s,
      u,
    );
  }
  const row = new Float32Array(x.length);
  for (let j = 0; j < n; j++) row[ids[j]] = w[j];
  return drawExact(row, s, u, z);
}
