// The mask suite's head-alone table: the signal nodes over fixed [B, 1, V] logits, with and without the masked group, so a masked row's head cost is read without the model's noise.
import * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';
import { concat, FLOAT, GRAPH_INPUT, MODEL_GRAPH, valueInfo, wrap } from '../../runtime/runner/graph/onnxProto.ts';
import { signalHead } from '../../runtime/runner/graph/signalHead.ts';
import { headRow, planHead } from '../../runtime/runner/stepHead.ts';
import { analyzeHead } from '../../runtime/runner/sampling.ts';
import { sessionOptions } from '../../runtime/runner/sessionOptions.ts';
import type { SamplingParams, StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { percentile } from '../../runtime/util/stats.ts';

async function headSession(V: number, masked: boolean): Promise<ort.InferenceSession> {
  const w = protobuf.Writer.create();
  w.uint32(1 << 3).int64(8);
  w.uint32((8 << 3) | 2)
    .fork()
    .uint32((1 << 3) | 2)
    .string('')
    .uint32(2 << 3)
    .int64(17)
    .ldelim();
  const graph = concat([valueInfo(GRAPH_INPUT, 'logits', FLOAT), ...signalHead('logits', { opset: 17, vocab: V, lastOnly: true, masked })]);
  return ort.InferenceSession.create(concat([w.finish(), wrap(MODEL_GRAPH, graph)]), { ...sessionOptions(1), logSeverityLevel: 3 });
}

export interface HeadCase {
  name: string;
  sampling: SamplingParams;
  /** The graph has the masked group. */
  masked: boolean;
  masks?: Int32Array[];
}

/** Median ms per row of planHead + the head's run + analyzeHead for `batch` rows of each case, the cases taking turns `reps` times. */
export async function headAloneMs(V: number, batch: number, reps: number, cases: readonly HeadCase[]): Promise<number[]> {
  const sessions = { plain: await headSession(V, false), masked: await headSession(V, true) };
  const logits = new ort.Tensor(
    'float32',
    Float32Array.from({ length: batch * V }, (_, i) => Math.sin(i * 12.9898) * 3),
    [batch, 1, V],
  );
  const scratch = { allowed: new Uint8Array(0) };
  const times = cases.map((): number[] => []);
  const order = Array.from({ length: batch }, (_, b) => b);
  for (let rep = -5; rep < reps; rep++) {
    for (const [k, c] of cases.entries()) {
      const rows: StepRow[] = order.map((i) => ({
        cacheId: i,
        requestId: `h${i}`,
        tokens: [1],
        position: 5,
        sampling: { ...c.sampling, seed: i },
        wants: NO_WANTS,
        mask: c.masks?.[(Math.max(rep, 0) * batch + i) % c.masks.length],
      }));
      const t0 = performance.now();
      const inputs: Record<string, ort.Tensor> = { logits };
      const plan = planHead(
        rows,
        order,
        rows.map((r) => r.tokens),
        { V, model: 'm', eosIds: [], topLogitsK: 0, lengths: rows.map(() => 5), maskedGroup: c.masked, scratch },
        inputs,
      );
      const out = await (c.masked ? sessions.masked : sessions.plain).run(inputs, plan.fetches);
      for (let b = 0; b < batch; b++) analyzeHead(headRow(out, b, plan, V, undefined), V, { sampling: rows[b].sampling, position: 6, model: 'm', topK: 0 });
      if (rep >= 0) times[k].push((performance.now() - t0) / batch);
    }
  }
  for (const s of Object.values(sessions)) await s.release();
  return times.map((t) => percentile(t, 50));
}
