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

/** What a step feeds the signal nodes and fetches, and where each batch row's outputs are (-1: not in that group). */
export interface HeadPlan {
  K: number;
  fetches: string[];
  /** Batch row b's index in the sigRows, drawRows and cutRows groups (graph/signalHead.ts). */
  sig: Int32Array;
  draw: Int32Array;
  cut: Int32Array;
}

/** Whether a row reads the distribution signals (log-sum-exp, entropy): its algorithm, its logprobs or its top-k pairs. */
export function readsSignals(r: StepRow): boolean {
  return r.wants.signals !== false || r.wants.topK > 0 || r.wants.heads.length > 0 || r.sampling.topLogprobs !== undefined;
}

const rowIndex = (list: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(list, BigInt), [list.length]);

/**
 * The signal nodes' feeds for a step (candidates K, per-row 1 / temperature and seeded uniform,
 * and which rows each group of nodes runs over) and what it fetches: candidates always;
 * log-sum-exp and entropy for rows that read signals; ORT's draw for temperature rows without
 * cuts; the row of tempered probabilities for rows under cuts (the exact fallback may read it); the
 * row of logits only for rows with penalties or a grammar mask (a banned EOS the graph leaves out of its draws itself:
 * qwen3-42m, B = 8, top_p 0.9 + top_k 20 below min_tokens, 17.7 ms a step against 42.9 through the logits).
 * A greedy row that reads no signal costs its TopK only (V = 151,936: 0.06-0.18 ms a row against 0.46-0.81).
 */
export function planHead(rows: readonly StepRow[], order: readonly number[], feeds: readonly (readonly number[] | null)[], ctx: HeadContext, inputs: Record<string, ort.Tensor>): HeadPlan {
  const B = rows.length;
  const V = ctx.V;
  let K = 2;
  let needLogits = false;
  const invT = new Float32Array(B).fill(1);
  const u = new Float32Array(B);
  const groups: [number[], number[], number[]] = [[], [], []];
  const bans: (number[] | undefined)[] = new Array<number[] | undefined>(B).fill(undefined);
  const sig = new Int32Array(B).fill(-1);
  const draw = new Int32Array(B).fill(-1);
  const cut = new Int32Array(B).fill(-1);
  for (let b = 0; b < B; b++) {
    const i = order[b];
    const f = feeds[i];
    if (f === null) continue;
    const r = rows[i];
    const s = r.sampling;
    // a masked row is analysed in JavaScript over its allowed tokens (maskedRow.ts): its row of logits only
    if (r.mask) {
      needLogits = true;
      continue;
    }
    K = Math.max(K, r.wants.topK, s.topLogprobs ?? 0, ctx.topLogitsK);
    if (readsSignals(r)) sig[b] = groups[0].push(b) - 1;
    const banned = bannedIds({ sampling: s, eosTokenIds: ctx.eosIds }, V);
    if (banned.length > 0) bans[b] = banned;
    if (drawNeedsLogits(s)) needLogits = true;
    else if (!(s.temperature > 0)) K = Math.max(K, banned.length + 1);
    else {
      invT[b] = 1 / s.temperature;
      // the draw's position: the sampled token's, after this step's feed
      u[b] = drawUniform(s.seed, ctx.lengths[i] + f.length, ctx.model, SAMPLE_STREAM);
      if (hasCuts(s)) {
        cut[b] = groups[2].push(b) - 1;
        K = Math.max(K, CANDIDATES, s.topK > 0 ? Math.min(s.topK, MAX_CANDIDATES) : 0);
      } else draw[b] = groups[1].push(b) - 1;
    }
  }
  K = Math.min(K, V);
  inputs[SIG.k] = new ort.Tensor('int64', BigInt64Array.from([BigInt(K)]), [1]);
  inputs[SIG.invT] = new ort.Tensor('float32', invT, [B, 1, 1]);
  inputs[SIG.u] = new ort.Tensor('float32', u, [B, 1, 1]);
  inputs[SIG.sigRows] = rowIndex(groups[0]);
  inputs[SIG.drawRows] = rowIndex(groups[1]);
  inputs[SIG.cutRows] = rowIndex(groups[2]);
  // each row's banned ids, padded with its first (or id 0, not banned): the graph leaves them out of its draws
  const NB = Math.max(1, ...bans.map((l) => l?.length ?? 0));
  const banIds = new BigInt64Array(B * NB);
  const banOn = new Uint8Array(B * NB);
  for (let b = 0; b < B; b++) {
    const l = bans[b];
    if (!l) continue;
    for (let j = 0; j < NB; j++) banIds[b * NB + j] = BigInt(l[Math.min(j, l.length - 1)]);
    banOn.fill(1, b * NB, b * NB + NB);
  }
  inputs[SIG.banIds] = new ort.Tensor('int64', banIds, [B, 1, NB]);
  inputs[SIG.banOn] = new ort.Tensor('bool', banOn, [B, 1, NB]);
  const fetches: string[] = [SIG.topLogits, SIG.topIds];
  if (groups[0].length > 0) fetches.push(SIG.lse, SIG.entropy);
  if (groups[1].length > 0) fetches.push(SIG.draw, SIG.drawLogit);
  if (groups[2].length > 0) fetches.push(SIG.topWeights, SIG.weightSum, SIG.weights);
  if (needLogits) fetches.push('logits');
  return { K, fetches, sig, draw, cut };
}

/** Row `b` of the signal nodes' outputs (K candidates each), with the rows of probabilities and logits when fetched; NaN log-sum-exp and entropy when the row reads no signal. */
export function headRow(out: ort.InferenceSession.ReturnType, b: number, plan: HeadPlan, V: number, rowLogits: ((b: number) => Float32Array) | undefined): HeadRow {
  const K = plan.K;
  const ids = out[SIG.topIds].data as BigInt64Array;
  const topIds = new Array<number>(K);
  for (let j = 0; j < K; j++) topIds[j] = Number(ids[b * K + j]);
  const s = plan.sig[b];
  const h: HeadRow = {
    topLogits: (out[SIG.topLogits].data as Float32Array).subarray(b * K, b * K + K),
    topIds,
    lse: s >= 0 ? (out[SIG.lse].data as Float32Array)[s] : NaN,
    entropy: s >= 0 ? (out[SIG.entropy].data as Float32Array)[s] : NaN,
  };
  const d = plan.draw[b];
  if (d >= 0) {
    h.draw = Number((out[SIG.draw].data as BigInt64Array)[d]);
    h.drawLogit = (out[SIG.drawLogit].data as Float32Array)[d];
  }
  const c = plan.cut[b];
  if (c >= 0) {
    h.topWeights = (out[SIG.topWeights].data as Float32Array).subarray(c * K, c * K + K);
    h.weightSum = (out[SIG.weightSum].data as Float32Array)[c];
    h.weights = (out[SIG.weights].data as Float32Array).subarray(c * V, (c + 1) * V);
  }
  if (rowLogits) h.logits = rowLogits(b);
  return h;
}
