// The exported ONNX graphs themselves: empty past works, and left or right padding is masked out.
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { MODEL_NAMES, modelDir, readGolden } from './helpers.ts';

const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);

describe.each(MODEL_NAMES)('ONNX export: %s', (name) => {
  it('past=0 prefill with left and right padding gives each row its unpadded logits', async () => {
    const f = loadModelFolder(modelDir(name));
    const c = f.config;
    const s = await ort.InferenceSession.create(path.join(modelDir(name), 'onnx', 'model.onnx'), { intraOpNumThreads: 1 });
    const [a, b] = readGolden(name)
      .rows.map((r) => r.input_ids)
      .sort((x, y) => x.length - y.length)
      .filter((_, i, arr) => i === 0 || i === arr.length - 1);
    expect(a.length).toBeLessThan(b.length);
    const emptyPast = (B: number): Record<string, ort.Tensor> => {
      const o: Record<string, ort.Tensor> = {};
      for (let l = 0; l < c.numLayers; l++)
        for (const k of ['key', 'value']) o[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [B, c.numKvHeads, 0, c.headDim]);
      return o;
    };
    const run = async (rows: number[][], mask: number[][], pos: number[][]) => {
      const S = rows[0].length;
      const out = await s.run({
        input_ids: i64(rows.flat(), [rows.length, S]),
        attention_mask: i64(mask.flat(), [rows.length, S]),
        position_ids: i64(pos.flat(), [rows.length, S]),
        ...emptyPast(rows.length),
      });
      return out.logits;
    };
    const V = c.vocabSize;
    const last = (t: ort.Tensor, row: number, at: number) =>
      Array.from((t.data as Float32Array).subarray((row * t.dims[1] + at) * V, (row * t.dims[1] + at + 1) * V));
    const solo = await run([a], [a.map(() => 1)], [a.map((_, i) => i)]);
    const ref = last(solo, 0, a.length - 1);
    const padN = b.length - a.length;
    const pad = Array(padN).fill(c.padTokenId);
    // left padding: a's tokens at the end of the row
    const left = await run(
      [[...pad, ...a], b],
      [[...pad.map(() => 0), ...a.map(() => 1)], b.map(() => 1)],
      [[...pad.map(() => 0), ...a.map((_, i) => i)], b.map((_, i) => i)],
    );
    // right padding: a's tokens at the start of the row
    const right = await run(
      [[...a, ...pad], b],
      [[...a.map(() => 1), ...pad.map(() => 0)], b.map(() => 1)],
      [[...a.map((_, i) => i), ...pad.map(() => 0)], b.map((_, i) => i)],
    );
    const close = (x: number[], y: number[]) => x.forEach((v, i) => expect(v).toBeCloseTo(y[i], 3));
    close(last(left, 0, b.length - 1), ref);
    close(last(right, 0, a.length - 1), ref);
    for (const t of [left, right]) for (const v of t.data as Float32Array) expect(Number.isFinite(v)).toBe(true);
    await s.release();
  });
});
