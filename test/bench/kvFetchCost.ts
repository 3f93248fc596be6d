// What fetching the KV cache back from ONNX Runtime costs one decode step: session.run with every output beside logits alone.
import * as ort from 'onnxruntime-node';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { sessionOptions } from '../../runtime/runner/onnxRunner.ts';
import { percentile } from '../../runtime/util/stats.ts';

export interface KvFetchCost {
  model: string;
  batch: number;
  ctx: number;
  /** Median CPU µs of one step (this thread: intraOpNumThreads 1) fetching logits and every present.* tensor, as the runner does. */
  with_kv_us: number;
  /** The same step fetching logits alone: ONNX Runtime still computes the new KV (attention needs it) but hands none back. */
  logits_only_us: number;
  /** 1 − logits_only ÷ with_kv: the share of a step that handing the KV back to JavaScript takes. */
  kv_fetch_share: number;
}

/**
 * One decode step (one new token per row, `ctx` tokens of past) timed both ways, alternating in
 * `rounds` blocks of `steps` steps; CPU time of the process (the session runs on this thread), medians
 * over the blocks. The inputs are constant: the step's cost does not depend on the values.
 */
export async function kvFetchCost(folderPath: string, opts: { batch: number; ctx: number; steps: number; rounds: number }): Promise<KvFetchCost> {
  const folder = loadModelFolder(folderPath);
  const { numKvHeads: kv, headDim: hd } = folder.config;
  const session = await ort.InferenceSession.create(folder.onnxPath, sessionOptions(1));
  const { batch: B, ctx: T } = opts;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', new BigInt64Array(B).fill(4n), [B, 1]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(B * (T + 1)).fill(1n), [B, T + 1]),
  };
  if (session.inputNames.includes('position_ids')) feeds.position_ids = new ort.Tensor('int64', new BigInt64Array(B).fill(BigInt(T)), [B, 1]);
  for (const n of session.inputNames)
    if (n.startsWith('past_key_values.')) feeds[n] = new ort.Tensor('float32', new Float32Array(B * kv * T * hd).fill(0.01), [B, kv, T, hd]);
  const all = session.outputNames.filter((n) => n === 'logits' || n.startsWith('present.'));
  const time = async (fetches: string[]): Promise<number> => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < opts.steps; i++) await session.run(feeds, fetches);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / opts.steps;
  };
  await time(all);
  await time(['logits']);
  const withKv: number[] = [];
  const logitsOnly: number[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    // the first side swaps every round, so a drift of the machine falls on both
    if (r % 2 === 0) {
      withKv.push(await time(all));
      logitsOnly.push(await time(['logits']));
    } else {
      logitsOnly.push(await time(['logits']));
      withKv.push(await time(all));
    }
  }
  await session.release();
  const w = percentile(withKv, 50);
  const l = percentile(logitsOnly, 50);
  return {
    model: folder.name,
    batch: B,
    ctx: T,
    with_kv_us: Math.round(w),
    logits_only_us: Math.round(l),
    kv_fetch_share: Math.round((1 - l / w) * 1000) / 1000,
  };
}
