// Runs a model's router heads (small ONNX scorers over a step's hidden state, token or top logits), each batched over the rows that asked for it.
import * as ort from 'onnxruntime-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { RouterHeadSpec } from './modelFolder.ts';
import type { StepRow } from './modelRunner.ts';

export interface RouterHead {
  spec: RouterHeadSpec;
  session: ort.InferenceSession;
}

/** What one forward pass left per step row, the heads' inputs; a row fed nothing (null) gets no scores. */
export interface HeadInputs {
  fed: readonly (readonly number[] | null)[];
  /** Each fed row's signals; its `heads` receives the scores. */
  results: (TokenSignals | undefined)[];
  hidden: (Float32Array | undefined)[];
  topLogits: number[][];
}

/** Scores every head some fed row asks for, one session.run per head; returns the ms spent inside them. */
export async function runRouterHeads(
  heads: ReadonlyMap<string, RouterHead>,
  rows: readonly StepRow[],
  { fed, results, hidden, topLogits }: HeadInputs,
  dims: { hiddenSize: number; topK: number },
): Promise<number> {
  let ms = 0;
  const names = new Set<string>();
  rows.forEach((r, i) => {
    if (fed[i] !== null) for (const h of r.wants.heads) names.add(h);
  });
  const H = dims.hiddenSize;
  for (const name of names) {
    const head = heads.get(name)!;
    const idx = rows.flatMap((r, i) => (fed[i] !== null && r.wants.heads.includes(name) ? [i] : []));
    const n = idx.length;
    const feeds: Record<string, ort.Tensor> = {};
    for (const inp of head.spec.inputs) {
      if (inp.source === 'hidden') {
        const x = new Float32Array(n * H);
        idx.forEach((i, j) => x.set(hidden[i]!, j * H));
        feeds[inp.name] = new ort.Tensor('float32', x, [n, H]);
      } else if (inp.source === 'token') {
        feeds[inp.name] = new ort.Tensor(
          'int64',
          BigInt64Array.from(idx, (i) => BigInt(results[i]!.token)),
          [n, 1],
        );
      } else {
        const K = dims.topK;
        const x = new Float32Array(n * K);
        idx.forEach((i, j) => x.set(topLogits[i].slice(0, K), j * K));
        feeds[inp.name] = new ort.Tensor('float32', x, [n, K]);
      }
    }
    const t0 = performance.now();
    const out = await head.session.run(feeds);
    ms += performance.now() - t0;
    const score = (out.score ?? out[head.session.outputNames[0]]).data as Float32Array;
    idx.forEach((i, j) => {
      (results[i]!.heads as Record<string, number>)[name] = score[j];
    });
  }
  return ms;
}
