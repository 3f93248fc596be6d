// Per-row distribution signals and seeded sampling from one row of logits (computed once per row).
import type { SamplingParams, SamplingPenalties } from './modelRunner.ts';
import { fmix32, hashString, murmurBlock } from '../util/hash.ts';

/** Draw streams: sampling and routing use different streams so they never share a draw. */
export const SAMPLE_STREAM = 0x53414d50; // "SAMP"
export const ROUTE_STREAM = 0x524f5554; // "ROUT"

/**
 * A uniform draw in [0, 1) that is a pure function of (seed, position, model, stream): a
 * counter-based hash, not a stateful generator, so a request's draws do not depend on which other
 * requests share its batch, nor on how often the step was retried.
 */
export function drawUniform(seed: number, position: number, model: string | number, stream: number = SAMPLE_STREAM): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  const m = typeof model === 'number' ? model >>> 0 : hashString(model);
  let a = murmurBlock(murmurBlock(murmurBlock(murmurBlock(0x9e3779b9, lo), hi), position >>> 0), m);
  a = fmix32(murmurBlock(a, stream));
  const b = fmix32(murmurBlock(a, 0x7f4a7c15));
  // 53 random bits -> a double in [0, 1)
  return ((a >>> 5) * 67108864 + (b >>> 6)) / 9007199254740992;
}

export interface RowAnalysis {
  token: number;
  entropy: number;
  maxProb: number;
  margin: number;
  tokenProb: number;
  topIds: number[];
  topProbs: number[];
  /** Raw logits of the `topLogitsK` best tokens, best first (for routers that read logits). */
  topLogits: number[];
}

export interface AnalyzeOptions {
  sampling: SamplingParams;
  /** Position of the sampled token in the full sequence. */
  position: number;
  /** Model name: part of the draw key. */
  model: string;
  /** How many top (id, prob) pairs to report. */
  topK: number;
  /** How many top raw logits to report (router inputs); 0 = none. */
  topLogitsK?: number;
  /** The model's EOS ids, left out of the draw with `sampling.stopTokenIds` when `sampling.suppressEos` is set. */
  eosTokenIds?: readonly number[];
  /** The tokens the cache holds before `position` (needed only with `sampling.penalties`). */
  history?: readonly number[];
}

/** Indices of the k largest entries of `x[0..n)`, best first (partial insertion; k is small). */
export function topIndices(x: Float32Array | Float64Array, k: number): number[] {
  const n = x.length;
  k = Math.min(k, n);
  const ids: number[] = [];
  if (k <= 0) return ids;
  for (let i = 0; i < n; i++) {
    const v = x[i];
    if (ids.length === k && v <= x[ids[k - 1]]) continue;
    let j = ids.length < k ? ids.length : k - 1;
    if (ids.length < k) ids.push(i);
    while (j > 0 && x[ids[j - 1]] < v) {
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = i;
  }
  return ids;
}

let probs = new Float64Array(0);

/** The row's probabilities, in one buffer reused by every call (read only before analyzeRow returns): no allocation per row and step. */
function scratch(V: number): Float64Array {
  if (probs.length !== V) probs = new Float64Array(V);
  return probs;
}

/**
 * Softmax, normalised entropy, max-prob, margin, top-k and the sampled token for one row.
 * Signals describe the model's own distribution (temperature 1); temperature, top-k and top-p
 * shape only the draw.
 */
export function analyzeRow(logits: Float32Array, opts: AnalyzeOptions): RowAnalysis {
  const V = logits.length;
  const banned = opts.sampling.suppressEos ? bannedIds(V, opts.eosTokenIds, opts.sampling.stopTokenIds) : NONE;
  const ban = banned.length > 0 ? banned[0] : -1;
  let max = -Infinity;
  let arg = 0;
  // Best token other than a banned EOS: the greedy pick, and the shift that keeps the draw's exps finite.
  let drawMax = -Infinity;
  let drawArg = 0;
  for (let i = 0; i < V; i++) {
    const x = logits[i];
    if (x > max) {
      max = x;
      arg = i;
    }
    if (x > drawMax && (ban < 0 || !banned.includes(i))) {
      drawMax = x;
      drawArg = i;
    }
  }
  const p = scratch(V);
  let z = 0;
  for (let i = 0; i < V; i++) {
    const e = Math.exp(logits[i] - max);
    p[i] = e;
    z += e;
  }
  let ent = 0;
  let p1 = 0;
  let p2 = 0;
  const inv = 1 / z;
  for (let i = 0; i < V; i++) {
    const q = p[i] * inv;
    p[i] = q;
    if (q > 0) ent -= q * Math.log(q);
    if (q > p1) {
      p2 = p1;
      p1 = q;
    } else if (q > p2) p2 = q;
  }
  const kReport = Math.max(opts.topK, 0);
  const top = topIndices(p, kReport);
  const s = opts.sampling;
  let token: number;
  if (s.penalties) token = drawPenalised(logits, s, s.penalties, opts, banned);
  else if (ban < 0) token = s.temperature > 0 ? sampleToken(logits, max, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM)) : arg;
  else if (!(s.temperature > 0)) token = drawArg;
  else {
    // The banned logits are set aside for the draw only, then put back.
    const saved = banned.map((t) => logits[t]);
    for (const t of banned) logits[t] = -Infinity;
    try {
      token = sampleToken(logits, drawMax, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM));
    } finally {
      banned.forEach((t, j) => (logits[t] = saved[j]));
    }
  }
  const kl = opts.topLogitsK ?? 0;
  const topLogits = kl > 0 ? topIndices(logits, kl).map((i) => logits[i]) : [];
  return {
    token,
    entropy: V > 1 ? ent / Math.log(V) : 0,
    maxProb: p1,
    margin: p1 - p2,
    tokenProb: p[token],
    topIds: top,
    topProbs: top.map((i) => p[i]),
    topLogits,
  };
}

/**
 * The draw over penalised and biased logits (a copy: signals keep the model's own numbers). The
 * uniform is the same (seed, position, model) draw as without penalties, so seeded runs replay.
 */
const NONE: readonly number[] = Object.freeze([]);

/** The ids a row below its min_tokens leaves out of the draw: its EOS ids and stop ids inside the vocabulary, each once; none when they would ban every token. */
function bannedIds(V: number, eos: readonly number[] | undefined, stop: readonly number[] | undefined): readonly number[] {
  const ids = [...new Set([...(eos ?? NONE), ...(stop ?? NONE)])].filter((t) => Number.isInteger(t) && t >= 0 && t < V);
  return ids.length < V ? ids : NONE;
}

function drawPenalised(logits: Float32Array, s: SamplingParams, pen: SamplingPenalties, opts: AnalyzeOptions, banned: readonly number[]): number {
  const x = Float32Array.from(logits);
  const V = x.length;
  if (pen.frequency !== 0 || pen.presence !== 0) {
    const h = opts.history ?? [];
    const end = Math.min(h.length, opts.position);
    const counts = new Map<number, number>();
    for (let i = Math.max(0, pen.outputFrom); i < end; i++) counts.set(h[i], (counts.get(h[i]) ?? 0) + 1);
    for (const [t, c] of counts) if (t >= 0 && t < V) x[t] -= pen.frequency * c + pen.presence;
  }
  for (const [t, b] of pen.logitBias) if (t >= 0 && t < V) x[t] += b;
  for (const t of banned) x[t] = -Infinity;
  let max = -Infinity;
  let arg = 0;
  for (let i = 0; i < V; i++) {
    if (x[i] > max) {
      max = x[i];
      arg = i;
    }
  }
  return s.temperature > 0 ? sampleToken(x, max, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM)) : arg;
}

/** Temperature / top-k / top-p draw with a given uniform `u`. */
export function sampleToken(logits: Float32Array, max: number, s: SamplingParams, u: number): number {
  const V = logits.length;
  const t = s.temperature;
  let ids: number[];
  if (s.topK > 0 && s.topK < V) {
    ids = topIndices(logits, s.topK);
  } else if (s.topP < 1) {
    ids = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  } else {
    ids = [];
  }
  if (ids.length === 0) {
    // full vocabulary, no ordering needed: inverse CDF in id order
    const w = new Float64Array(V);
    let z = 0;
    for (let i = 0; i < V; i++) z += w[i] = Math.exp((logits[i] - max) / t);
    let acc = 0;
    const target = u * z;
    for (let i = 0; i < V; i++) {
      acc += w[i];
      if (acc > target) return i;
    }
    return V - 1;
  }
  const w = ids.map((i) => Math.exp((logits[i] - max) / t));
  let z = w.reduce((a, b) => a + b, 0);
  if (s.topP < 1) {
    // keep the smallest prefix whose mass reaches topP (at least one token)
    let acc = 0;
    let n = 0;
    while (n < w.length) {
      acc += w[n];
      n++;
      if (acc >= s.topP * z) break;
    }
    w.length = n;
    ids = ids.slice(0, n);
    z = acc;
  }
  const target = u * z;
  let acc = 0;
  for (let j = 0; j < w.length; j++) {
    acc += w[j];
    if (acc > target) return ids[j];
  }
  return ids[ids.length - 1];
}
