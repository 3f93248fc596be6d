// The row analysis as it was before the signal nodes (three O(V) passes, a full sort for top-p): the baseline of the samplingRow bench.
import type { SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { drawUniform, SAMPLE_STREAM, topIndices, type AnalyzeOptions, type RowAnalysis } from '../../runtime/runner/sampling.ts';

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
export function legacyAnalyzeRow(logits: Float32Array, opts: AnalyzeOptions): RowAnalysis {
  const V = logits.length;
  const eos = opts.eosTokenIds?.[0] ?? -1;
  const ban = opts.sampling.suppressEos && typeof eos === 'number' && eos >= 0 && eos < V && V > 1 ? eos : -1;
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
    if (i !== ban && x > drawMax) {
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
  if (ban < 0) token = s.temperature > 0 ? sampleToken(logits, max, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM)) : arg;
  else if (!(s.temperature > 0)) token = drawArg;
  else {
    // The banned logit is set aside for the draw only, then put back.
    const saved = logits[ban];
    logits[ban] = -Infinity;
    try {
      token = sampleToken(logits, drawMax, s, drawUniform(s.seed, opts.position, opts.model, SAMPLE_STREAM));
    } finally {
      logits[ban] = saved;
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

/** Temperature / top-k / top-p draw with a given uniform `u`. */
function sampleToken(logits: Float32Array, max: number, s: SamplingParams, u: number): number {
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
