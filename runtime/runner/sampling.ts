// Per-row distribution signals and the seeded draw: from the graph's signal outputs (candidates, log-sum-exp, entropy, draw) or from a whole row of logits.
import type { SamplingParams, SamplingPenalties } from './modelRunner.ts';
import { drawExact, drawFromCandidates, hasCuts } from './nucleus.ts';
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

/** Indices of the k largest entries of `x[0..n)`, best first, ties by lower index (partial insertion; k is small). */
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

/** The ids a draw leaves out: the EOS id(s) while `suppressEos` holds (never the whole vocabulary). */
export function bannedIds(opts: Pick<AnalyzeOptions, 'sampling' | 'eosTokenIds'>, V: number): number[] {
  if (!opts.sampling.suppressEos) return [];
  const list = [...new Set([...(opts.eosTokenIds ?? []), ...(opts.sampling.stopTokenIds ?? [])])].filter((t) => Number.isInteger(t) && t >= 0 && t < V);
  return list.length < V ? list : [];
}

/** A row whose draw reads the whole row of logits: penalties and logit_bias change it (a banned EOS the signal nodes leave out themselves). */
export function drawNeedsLogits(s: SamplingParams): boolean {
  return s.penalties !== undefined;
}

/**
 * Softmax signals (normalised entropy, max-prob, margin, top-k) and the sampled token for one
 * row, all in JavaScript: the reference path, for exports without the signal nodes. Signals
 * describe the model's own distribution (temperature 1); temperature and the cuts shape only the draw.
 */
export function analyzeRow(logits: Float32Array, opts: AnalyzeOptions): RowAnalysis {
  const V = logits.length;
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
  // one exp per id: Σ e^d and Σ e^d·d give log-sum-exp and the entropy (H = log z - Σ e^d·d / z)
  let z = 0;
  let zd = 0;
  for (let i = 0; i < V; i++) {
    const d = logits[i] - max;
    const e = Math.exp(d);
    z += e;
    zd += e * d;
  }
  const lse = max + Math.log(z);
  const kl = opts.topLogitsK ?? 0;
  const top = topIndices(logits, Math.max(2, opts.topK, kl));
  const token = drawRow(logits, opts, bannedIds(opts, V), top[0]);
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

/** What the signal nodes hand back for one row (graph/signalHead.ts), best candidates first. */
export interface HeadRow {
  topLogits: Float32Array;
  topIds: number[];
  lse: number;
  /** The entropy in nats. */
  entropy: number;
  /** The candidates' tempered probabilities, the whole row's sum of them, ORT's draw over the whole row and its logit (temperature rows). */
  topWeights?: Float32Array;
  weightSum?: number;
  draw?: number;
  drawLogit?: number;
  /** The whole row of tempered probabilities (fetched when a row of the step has cuts: the exact fallback reads it). */
  weights?: Float32Array;
  /** The whole row of logits (fetched for rows whose draw reads them: drawNeedsLogits). */
  logits?: Float32Array;
  /** How many tokens the draw ranks: a grammar-masked row's allowed tokens (default V; its candidates then are allowed ones only). */
  ranked?: number;
}

/** Signals and the sampled token of one row from the signal nodes' outputs; the O(V) work was ORT's. */
export function analyzeHead(h: HeadRow, V: number, opts: AnalyzeOptions): RowAnalysis {
  const s = opts.sampling;
  const banned = bannedIds(opts, V);
  let token: number;
  let tokenLogit: number;
  if (h.logits && drawNeedsLogits(s)) {
    token = drawRow(h.logits, opts, banned, h.topIds[0]);
    tokenLogit = h.logits[token];
  } else if (!(s.temperature > 0)) {
    let j = 0;
    while (banned.includes(h.topIds[j]) && j + 1 < h.topIds.length) j++;
    token = h.topIds[j];
    tokenLogit = h.topLogits[j];
  } else if (!hasCuts(s)) {
    token = h.draw!;
    tokenLogit = h.drawLogit!;
  } else {
    const u = drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM);
    const n = h.topIds.length;
    // ranked by probability, ties by lower id (TopK ranks by logit: equal probabilities can differ there)
    const order = Array.from({ length: n }, (_, j) => j).sort((a, b) => h.topWeights![b] - h.topWeights![a] || h.topIds[a] - h.topIds[b]);
    const ids = order.map((j) => h.topIds[j]);
    const w = order.map((j) => h.topWeights![j]);
    token = drawFromCandidates(ids, w, n, h.weightSum!, h.ranked ?? V, s, u);
    if (token < 0) {
      if (!h.weights) throw new Error('analyzeHead: the draw reaches past the candidates but the row of probabilities was not fetched');
      token = drawExact(h.weights, s, u, h.weightSum);
    }
    const j = h.topIds.indexOf(token);
    // off the candidates: its logit from its tempered probability, x = x_r + T·log(w / w_r), r the best candidate not banned
    let r = 0;
    while (r + 1 < n && !(h.topWeights![r] > 0)) r++;
    tokenLogit = j >= 0 ? h.topLogits[j] : h.topLogits[r] + s.temperature * Math.log(h.weights![token] / h.topWeights![r]);
  }
  return rowSignals(Array.from(h.topLogits), h.topIds, h.lse, h.entropy, V, tokenLogit, token, opts);
}

/** The signals of a row (its top logits and ids, best first, log-sum-exp, entropy in nats); a NaN `lse` (a row that reads none: stepHead.ts readsSignals) leaves them 0. */
export function rowSignals(
  topLogits: readonly number[],
  topIds: readonly number[],
  lse: number,
  entropyNats: number,
  V: number,
  tokenLogit: number,
  token: number,
  opts: AnalyzeOptions,
): RowAnalysis {
  if (Number.isNaN(lse)) lse = Infinity;
  const p1 = Math.exp(topLogits[0] - lse);
  const p2 = topLogits.length > 1 ? Math.exp(topLogits[1] - lse) : 0;
  const k = Math.min(Math.max(opts.topK, 0), topIds.length);
  const ids = topIds.slice(0, k);
  return {
    token,
    entropy: V > 1 && entropyNats > 0 ? entropyNats / Math.log(V) : 0,
    maxProb: p1,
    margin: p1 - p2,
    tokenProb: Math.exp(tokenLogit - lse),
    topIds: ids,
    topProbs: ids.map((_, j) => Math.exp(topLogits[j] - lse)),
    topLogits: topLogits.slice(0, opts.topLogitsK ?? 0),
  };
}

/**
 * The draw over a whole row of logits in JavaScript: penalties and logit_bias on a copy (signals
 * keep the model's own numbers), banned ids out, then greedy or drawExact. `arg` is the row's
 * own argmax. The uniform is the same (seed, position, model) draw as on every other path.
 */
function drawRow(logits: Float32Array, opts: AnalyzeOptions, banned: readonly number[], arg: number): number {
  const s = opts.sampling;
  const pen = s.penalties;
  if (!pen && banned.length === 0 && !(s.temperature > 0)) return arg;
  const x = pen || banned.length > 0 ? Float32Array.from(logits) : logits;
  const V = x.length;
  if (pen) applyPenalties(x, pen, opts);
  for (const t of banned) x[t] = -Infinity;
  let max = -Infinity;
  let best = 0;
  for (let i = 0; i < V; i++) {
    if (x[i] > max) {
      max = x[i];
      best = i;
    }
  }
  if (!(s.temperature > 0)) return best;
  return sampleToken(x, max, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM));
}

export function applyPenalties(x: Float32Array, pen: SamplingPenalties, opts: AnalyzeOptions): void {
  const V = x.length;
  if (pen.frequency !== 0 || pen.presence !== 0) {
    const h = opts.history ?? [];
    const end = Math.min(h.length, opts.position);
    const counts = new Map<number, number>();
    for (let i = Math.max(0, pen.outputFrom); i < end; i++) counts.set(h[i], (counts.get(h[i]) ?? 0) + 1);
    for (const [t, c] of counts) if (t >= 0 && t < V) x[t] -= pen.frequency * c + pen.presence;
  }
  for (const [t, b] of pen.logitBias) if (t >= 0 && t < V) x[t] += b;
}

/**
 * Temperature / min-p / top-k / top-p draw with a given uniform `u` over logits whose largest is
 * `max`: the tempered weights exp((x - max) / T) in float32, then drawExact (nucleus.ts), the same
 * rule the signal nodes' candidates follow.
 */
export function sampleToken(logits: Float32Array, max: number, s: SamplingParams, u: number): number {
  const V = logits.length;
  const w = new Float32Array(V);
  const invT = 1 / s.temperature;
  let z = 0;
  for (let i = 0; i < V; i++) {
    w[i] = Math.exp((logits[i] - max) * invT);
    z += w[i];
  }
  return drawExact(w, s, u, z);
}
