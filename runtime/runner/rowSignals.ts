// Reads a forward pass's outputs into each fed row's signals: its draw, probabilities, top ids, hidden state.
import type * as ort from 'onnxruntime-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, StepRow } from './modelRunner.ts';
import { analyzeHead, analyzeRow } from './sampling.ts';
import { analyzeMasked } from './maskedRow.ts';
import { type HeadPlan, headRow } from './stepHead.ts';
import type { CacheEntry } from './batchKvStore.ts';

/** One pass as the runner fed it: rows in step order, `order[b]` the row in batch row b, `feeds[i]` null for a row fed nothing. */
export interface FedPass {
  rows: readonly StepRow[];
  entries: readonly CacheEntry[];
  order: readonly number[];
  feeds: readonly (readonly number[] | null)[];
  /** The longest feed: the pass's sequence length. */
  S: number;
  /** The signal nodes' fetches, when the graph has them; else `logits` was fetched. */
  plan: HeadPlan | undefined;
  wantHidden: boolean;
  /** Top logits the router heads read (0: none). */
  topLogitsK: number;
}

/** What the router heads read beside the signals, by step row. */
export interface RowSignals {
  results: (TokenSignals | undefined)[];
  topLogits: number[][];
  hidden: (Float32Array | undefined)[];
}

/** The signals of the next position of every fed row (the caches' lengths already include what was fed). */
export function rowSignals(out: ort.InferenceSession.ReturnType, info: ModelInfo, p: FedPass): RowSignals {
  const { rows, entries, order, feeds, S, plan } = p;
  const B = rows.length;
  // logits, when fetched, are [B, L, V]: L is 1 when the graph computes the last position only
  const logits = out.logits as ort.Tensor | undefined;
  const L = logits ? logits.dims[1] : 0;
  const V = info.vocabSize;
  const rowLogits = logits ? (b: number) => (logits.data as Float32Array).subarray((b * L + L - 1) * V, (b * L + L) * V) : undefined;
  const H = info.hiddenSize;
  const hid = p.wantHidden ? (out.hidden_states.data as Float32Array) : undefined;
  const results: (TokenSignals | undefined)[] = new Array(B);
  const topLogits: number[][] = new Array(B);
  const hiddenRows: (Float32Array | undefined)[] = new Array(B);
  for (let b = 0; b < B; b++) {
    const i = order[b];
    if (feeds[i] === null) continue;
    const r = rows[i];
    const opts = {
      sampling: r.sampling,
      position: entries[i].len,
      model: info.name,
      topK: Math.max(r.wants.topK, r.sampling.topLogprobs ?? 0),
      topLogitsK: p.topLogitsK,
      eosTokenIds: info.eosTokenIds,
      history: entries[i].ids,
    };
    // a masked row outside the masked group (penalties, or masks: 'js') is analysed from its row of logits
    const inJs = r.mask && !(plan && plan.masked[b] >= 0);
    const a = inJs
      ? analyzeMasked(rowLogits!(b), r.mask!, opts)
      : plan
        ? analyzeHead(headRow(out, b, plan, V, rowLogits), V, opts)
        : analyzeRow(rowLogits!(b), opts);
    topLogits[i] = a.topLogits;
    const h = hid ? hid.subarray((b * S + S - 1) * H, (b * S + S) * H) : undefined;
    hiddenRows[i] = h;
    results[i] = {
      token: a.token,
      entropy: a.entropy,
      maxProb: a.maxProb,
      margin: a.margin,
      tokenProb: a.tokenProb,
      topIds: a.topIds,
      topProbs: a.topProbs,
      // fixed object shape: hidden is always present (undefined unless asked for)
      hidden: r.wants.hidden && h ? h.slice() : undefined,
      heads: {},
    };
  }
  return { results, topLogits, hidden: hiddenRows };
}
