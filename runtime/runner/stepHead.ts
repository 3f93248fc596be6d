// A step's use of the signal nodes (graph/signalHead.ts): what it feeds them and fetches, and one row of their outputs.
import * as ort from 'onnxruntime-node';
import type { StepRow } from './modelRunner.ts';
import { bannedIds, drawNeedsLogits, drawUniform, SAMPLE_STREAM, type HeadRow } from './sampling.ts';
import { hasCuts } from './nucleus.ts';
import { SIG } from './graph/signalHead.ts';

/** Candidates a step's TopK keeps when a row draws under min-p / top-k / top-p (a larger `top_k` raises it up to MAX_CANDIDATES). */
export const CANDIDATES = 64;
export const MAX_CANDIDATES = 1024;

export interface HeadContext {
  /** Vocabulary size. */
  V: number;
  /** Model name: part of the draw key. */
  model: string;
  eosIds: readonly number[];
  /** Raw top logits the step's router heads read (0: none). */
  topLogitsK: number;
  /** Tokens each row's cache holds before this step's feed (row order). */
  lengths: readonly number[];
}

/**
 * The signal nodes' feeds for a step (candidates K, per-row 1 / temperature and seeded uniform)
 * and what it fetches: candidates, log-sum-exp and entropy always (ORT runs every node whatever is
 * fetched, so leaving one out saves only its copy); ORT's draw for temperature rows; the row of
 * tempered probabilities only when some row draws under cuts (the exact fallback may read it: a
 * [B, 1, V] output costs ~0.6 ms a row to hand over); the row of logits only for rows with
 * penalties or a banned EOS under temperature.
 */
export function planHead(rows: readonly StepRow[], order: readonly number[], feeds: readonly (readonly number[] | null)[], ctx: HeadContext, inputs: Record<string, ort.Tensor>): { K: number; fetches: string[] } {
  const B = rows.length;
  const V = ctx.V;
  let K = 2;
  let draw = false;
  let cuts = false;
  let needLogits = false;
  const invT = new Float32Array(B).fill(1);
  const u = new Float32Array(B);
  for (let b = 0; b < B; b++) {
    const i = order[b];
    const f = feeds[i];
    if (f === null) continue;
    const r = rows[i];
    const s = r.sampling;
    K = Math.max(K, r.wants.topK, s.topLogprobs ?? 0, ctx.topLogitsK);
    const banned = bannedIds({ sampling: s, eosTokenIds: ctx.eosIds }, V);
    if (drawNeedsLogits(s, banned)) needLogits = true;
    else if (!(s.temperature > 0)) K = Math.max(K, banned.length + 1);
    else {
      draw = true;
      invT[b] = 1 / s.temperature;
      // the draw's position: the sampled token's, after this step's feed
      u[b] = drawUniform(s.seed, ctx.lengths[i] + f.length, ctx.model, SAMPLE_STREAM);
      if (hasCuts(s)) {
        cuts = true;
        K = Math.max(K, CANDIDATES, s.topK > 0 ? Math.min(s.topK, MAX_CANDIDATES) : 0);
      }
    }
  }
  K = Math.min(K, V);
  inputs[SIG.k] = new ort.Tensor('int64', BigInt64Array.from([BigInt(K)]), [1]);
  inputs[SIG.invT] = new ort.Tensor('float32', invT, [B, 1, 1]);
  inputs[SIG.u] = new ort.Tensor('float32', u, [B, 1, 1]);
  const fetches: string[] = [SIG.topLogits, SIG.topIds, SIG.lse, SIG.entropy];
  if (draw) fetches.push(SIG.draw, SIG.drawLogit, SIG.topWeights, SIG.weightSum);
  if (cuts) fetches.push(SIG.weights);
  if (needLogits) fetches.push('logits');
  return { K, fetches };
}

/** Row `b` of the signal nodes' outputs (K candidates each), with the rows of probabilities and logits when fetched. */
export function headRow(out: ort.InferenceSession.ReturnType, b: number, K: number, V: number, rowLogits: ((b: number) => Float32Array) | undefined): HeadRow {
  const ids = out[SIG.topIds].data as BigInt64Array;
  const topIds = new Array<number>(K);
  for (let j = 0; j < K; j++) topIds[j] = Number(ids[b * K + j]);
  const h: HeadRow = {
    topLogits: (out[SIG.topLogits].data as Float32Array).subarray(b * K, b * K + K),
    topIds,
    lse: (out[SIG.lse].data as Float32Array)[b],
    entropy: (out[SIG.entropy].data as Float32Array)[b],
  };
  const draw = out[SIG.draw];
  if (draw) {
    h.draw = Number((draw.data as BigInt64Array)[b]);
    h.drawLogit = (out[SIG.drawLogit].data as Float32Array)[b];
    h.topWeights = (out[SIG.topWeights].data as Float32Array).subarray(b * K, b * K + K);
    h.weightSum = (out[SIG.weightSum].data as Float32Array)[b];
  }
  const w = out[SIG.weights];
  if (w) h.weights = (w.data as Float32Array).subarray(b * V, (b + 1) * V);
  if (rowLogits) h.logits = rowLogits(b);
  return h;
}
