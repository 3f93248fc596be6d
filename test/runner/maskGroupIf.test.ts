// The masked signal group runs only on steps with masked rows: it sits in an ONNX If, so an unmasked step's masked outputs are the else branch's empty tensors.
import * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';
import { describe, expect, it } from 'vitest';
import { concat, FLOAT, GRAPH_INPUT, MODEL_GRAPH, valueInfo, wrap } from '../../runtime/runner/graph/onnxProto.ts';
import { MASKED, signalHead } from '../../runtime/runner/graph/signalHead.ts';
import { maskWords } from '../../runtime/runner/maskedRow.ts';
import type { StepRow } from '../../runtime/runner/modelRunner.ts';
import { sessionOptions } from '../../runtime/runner/sessionOptions.ts';
import { planHead } from '../../runtime/runner/stepHead.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';

const V = 1000;
const B = 4;

async function session(): Promise<ort.InferenceSession> {
  const w = protobuf.Writer.create();
  w.uint32(1 << 3).int64(8);
  w.uint32((8 << 3) | 2)
    .fork()
    .uint32((1 << 3) | 2)
    .string('')
    .uint32(2 << 3)
    .int64(17)
    .ldelim();
  const graph = concat([valueInfo(GRAPH_INPUT, 'logits', FLOAT), ...signalHead('logits', { opset: 17, vocab: V, lastOnly: true, masked: true })]);
  return ort.InferenceSession.create(concat([w.finish(), wrap(MODEL_GRAPH, graph)]), { ...sessionOptions(1), logSeverityLevel: 3 });
}

describe('the masked group in an If', () => {
  it('an unmasked step gets empty masked outputs (no stand-in row); a step with masked rows gets one row each', async () => {
    const s = await session();
    const logits = new ort.Tensor(
      'float32',
      Float32Array.from({ length: B * V }, (_, i) => Math.sin(i * 12.9898) * 3),
      [B, 1, V],
    );
    const order = Array.from({ length: B }, (_, b) => b);
    const mask = new Int32Array(maskWords(V));
    mask[0] = 0b1011;
    for (const masked of [[], [1, 3]]) {
      const rows: StepRow[] = order.map((i) => ({
        cacheId: i,
        requestId: `r${i}`,
        tokens: [1],
        position: 5,
        sampling: { temperature: 0, topP: 1, topK: 0, seed: i },
        wants: NO_WANTS,
        mask: masked.includes(i) ? mask : undefined,
      }));
      const inputs: Record<string, ort.Tensor> = { logits };
      planHead(
        rows,
        order,
        rows.map((r) => r.tokens),
        { V, model: 'm', eosIds: [], topLogitsK: 0, lengths: rows.map(() => 5), maskedGroup: true },
        inputs,
      );
      const out = await s.run(inputs, [MASKED.topIds, MASKED.topLogits]);
      expect(out[MASKED.topIds].dims[0]).toBe(masked.length);
      if (masked.length > 0) {
        // the best allowed token of the first masked row is one of ids 0, 1, 3
        expect([0, 1, 3]).toContain(Number((out[MASKED.topIds].data as BigInt64Array)[0]));
      }
    }
    await s.release();
  });
});
