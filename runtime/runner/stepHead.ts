// A step's use of the signal nodes (graph/signalHead.ts): what it feeds them and fetches, and one row of their outputs.
import * as ort from 'onnxruntime-node';
import type { StepRow } from './modelRunner.ts';
import { bannedIds, drawNeedsLogits, drawUniform, SAMPLE_STREAM, type HeadRow } from './sampling.ts';
import { hasCuts } from './nucleus.ts';
import { MASKED, REFUSED, SIG, type GroupNames } from './graph/signalHead.ts';
import { allowedAtOrBelow, allows, allowsBesides, fillAllowed } from './maskedRow.ts';

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
  /** The graph has the masked group (graph/signalHead.ts MASKED); without it every masked row goes through maskedRow.ts analyzeMasked. */
  maskedGroup?: boolean;
  /**
   * The caller's buffer for the masked rows' bools, reused from step to step (a fresh 1.2 MB one costs
   * ~1.3 ms: eight rows at V = 151,936); grown here. Only one step of the caller's may be in flight.
   */
  scratch?: { allowed: Uint8Array };
}

/** What a step feeds the signal nodes and fetches, and where each batch row's outputs are (-1: not in that group). */
export interface HeadPlan {
  K: number;
  fetches: string[];
  /** Batch row b's index in its sigRows, drawRows and cutRows groups (graph/signalHead.ts; the masked group's for a masked row). */
  sig: Int32Array;
  draw: Int32Array;
  cut: Int32Array;
  /** Batch row b's index in the maskRows (-1: not in the masked group: unmasked, or masked and analysed in JavaScript). */
  masked: Int32Array;
  /** How many tokens a masked row's grammar allows (by batch row). */
  allowedCount: Int32Array;
  /** The masked rows' grammar masks (by batch row). */
  masks: (Int32Array | undefined)[];
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
 * row of logits only for rows with penalties (a banned EOS the graph leaves out of its draws itself:
 * qwen3-42m, B = 8, top_p 0.9 + top_k 20 below min_tokens, 17.7 ms a step against 42.9 through the logits).
 * A greedy row that reads no signal costs its TopK only (V = 151,936: 0.06-0.18 ms a row against 0.46-0.81).
 * A grammar-masked row goes to the masked group, fed its allowed tokens as bools; with penalties
 * (or a graph without the masked group) it fetches its row of logits for maskedRow.ts analyzeMasked.
 */
export function planHead(
  rows: readonly StepRow[],
  order: readonly number[],
  feeds: readonly (readonly number[] | null)[],
  ctx: HeadContext,
  inputs: Record<string, ort.Tensor>,
): HeadPlan {
  const B = rows.length;
  const V = ctx.V;
  let K = 2;
  let needLogits = false;
  const invT = new Float32Array(B).fill(1);
  const u = new Float32Array(B);
  // sigRows, drawRows, cutRows: of the plain rows (batch rows) and of the masked ones (maskRows indices)
  const groups: [number[], number[], number[]] = [[], [], []];
  const maskedGroups: [number[], number[], number[]] = [[], [], []];
  const maskRows: number[] = [];
  const bans: (number[] | undefined)[] = new Array<number[] | undefined>(B).fill(undefined);
  const sig = new Int32Array(B).fill(-1);
  const draw = new Int32Array(B).fill(-1);
  const cut = new Int32Array(B).fill(-1);
  const masked = new Int32Array(B).fill(-1);
  const masks = new Array<Int32Array | undefined>(B);
  for (let b = 0; b < B; b++) {
    const i = order[b];
    const f = feeds[i];
    if (f === null) continue;
    const r = rows[i];
    const s = r.sampling;
    if (drawNeedsLogits(s) || (r.mask && ctx.maskedGroup !== true)) {
      needLogits = true;
      if (r.mask) continue;
    }
    // a masked row's lists index the maskRows
    const g = r.mask ? maskedGroups : groups;
    let at = b;
    if (r.mask) {
      at = masked[b] = maskRows.push(b) - 1;
      masks[b] = r.mask;
    }
    K = Math.max(K, r.wants.topK, s.topLogprobs ?? 0, ctx.topLogitsK);
    if (readsSignals(r)) sig[b] = g[0].push(at) - 1;
    let banned = bannedIds({ sampling: s, eosTokenIds: ctx.eosIds }, V);
    // a grammar allowing only banned ids wins over the ban (maskedRow.ts analyzeMasked)
    if (r.mask && banned.length > 0 && !allowsBesides(r.mask, banned, V)) banned = [];
    if (banned.length > 0) bans[b] = banned;
    if (drawNeedsLogits(s)) continue;
    if (!(s.temperature > 0)) K = Math.max(K, banned.length + 1);
    else {
      invT[b] = 1 / s.temperature;
      // the draw's position: the sampled token's, after this step's feed
      u[b] = drawUniform(s.seed, ctx.lengths[i] + f.length, ctx.model, SAMPLE_STREAM);
      if (hasCuts(s)) {
        cut[b] = g[2].push(at) - 1;
        K = Math.max(K, CANDIDATES, s.topK > 0 ? Math.min(s.topK, MAX_CANDIDATES) : 0);
      } else draw[b] = g[1].push(at) - 1;
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
  const allowedCount = new Int32Array(B);
  if (ctx.maskedGroup === true) {
    const Bm = maskRows.length;
    if (Bm === 0) {
      // no rows: the graph's If skips the masked group (graph/signalHead.ts)
      inputs[SIG.maskRows] = rowIndex([]);
      inputs[SIG.allowed] = new ort.Tensor('bool', new Uint8Array(0), [0, 1, V]);
    } else {
      const scratch = ctx.scratch ?? { allowed: new Uint8Array(0) };
      if (scratch.allowed.length < B * V) scratch.allowed = new Uint8Array(B * V);
      // every byte of the rows fed is written (fillAllowed)
      const allowed = scratch.allowed.subarray(0, Bm * V);
      maskRows.forEach((b, j) => (allowedCount[b] = fillAllowed(allowed, j * V, masks[b]!, V)));
      inputs[SIG.maskRows] = rowIndex(maskRows);
      inputs[SIG.allowed] = new ort.Tensor('bool', allowed, [Bm, 1, V]);
    }
    inputs[MASKED.sigRows] = rowIndex(maskedGroups[0]);
    inputs[MASKED.drawRows] = rowIndex(maskedGroups[1]);
    inputs[MASKED.cutRows] = rowIndex(maskedGroups[2]);
  }
  const fetches: string[] = [SIG.topLogits, SIG.topIds];
  for (const [names, g] of [
    [SIG, groups],
    [MASKED, maskedGroups],
  ] as const) {
    if (names === MASKED && maskRows.length > 0) fetches.push(MASKED.topLogits, MASKED.topIds);
    if (g[0].length > 0) fetches.push(names.lse, names.entropy);
    if (g[1].length > 0) fetches.push(names.draw, names.drawLogit);
    if (g[2].length > 0) fetches.push(names.topWeights, names.weightSum, names.weights);
  }
  if (needLogits) fetches.push('logits');
  return { K, fetches, sig, draw, cut, masked, allowedCount, masks };
}

/**
 * Row `b` of the signal nodes' outputs (K candidates each), with the rows of probabilities and
 * logits when fetched; NaN log-sum-exp and entropy when the row reads no signal. A masked row's come
 * from the masked group, its candidates cut to the allowed tokens.
 */
export function headRow(
  out: ort.InferenceSession.ReturnType,
  b: number,
  plan: HeadPlan,
  V: number,
  rowLogits: ((b: number) => Float32Array) | undefined,
): HeadRow {
  const m = plan.masked[b];
  const names: GroupNames = m >= 0 ? MASKED : SIG;
  const at = (m >= 0 ? m : b) * plan.K;
  // TopK ranks refused tokens after every allowed one: a masked row's candidates stop at its allowed count
  const K = m >= 0 ? Math.min(plan.K, plan.allowedCount[b]) : plan.K;
  const ids = out[names.topIds].data as BigInt64Array;
  const topIds = new Array<number>(K);
  for (let j = 0; j < K; j++) topIds[j] = Number(ids[at + j]);
  const s = plan.sig[b];
  const h: HeadRow = {
    topLogits: (out[names.topLogits].data as Float32Array).subarray(at, at + K),
    topIds,
    lse: s >= 0 ? (out[names.lse].data as Float32Array)[s] : NaN,
    entropy: s >= 0 ? (out[names.entropy].data as Float32Array)[s] : NaN,
  };
  const d = plan.draw[b];
  if (d >= 0) {
    h.draw = Number((out[names.draw].data as BigInt64Array)[d]);
    h.drawLogit = (out[names.drawLogit].data as Float32Array)[d];
    const mask = plan.masks[b];
    // float rounding can carry the draw past its block's last id, onto a refused one: the allowed one
    // before it is the answer (its logit read from the candidates when there, else its probability reads 0)
    if (mask && !allows(mask, h.draw)) {
      h.draw = allowedAtOrBelow(mask, h.draw);
      const j = topIds.indexOf(h.draw);
      h.drawLogit = j >= 0 ? h.topLogits[j] : REFUSED;
    }
  }
  const c = plan.cut[b];
  if (c >= 0) {
    h.topWeights = (out[names.topWeights].data as Float32Array).subarray(c * plan.K, c * plan.K + K);
    h.weightSum = (out[names.weightSum].data as Float32Array)[c];
    h.weights = (out[names.weights].data as Float32Array).subarray(c * V, (c + 1) * V);
  }
  if (m >= 0) h.ranked = plan.allowedCount[b];
  if (rowLogits) h.logits = rowLogits(b);
  return h;
}
