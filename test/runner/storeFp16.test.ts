// storeFp16 stores an export's matrices as float16 behind Casts: the graph computes what it did with fp16-rounded weights, the rest stays fp32, and a second pass changes nothing.
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { storeFp16 } from '../../examples/training/storeFp16.ts';
import { fields, GRAPH_INITIALIZER, GRAPH_NODE, MODEL_GRAPH, nodeInfo, text } from '../../runtime/runner/graph/onnxProto.ts';
import { encodeOnnxModel } from '../support/realShape/onnxWriter.ts';
import { float16Bits } from '../support/realShape/quantizeWeights.ts';
import { seededNormal } from '../support/realShape/seededNormal.ts';

const K = 64;
const N = 32;
const W = seededNormal('store-fp16/w', K * N, 0.05);
const NORM = seededNormal('store-fp16/norm', K, 0.1).map((x) => 1 + x);

/** y = (x * norm) @ w: a 1-D weight of 256 bytes before a [64, 32] matrix of 8 KiB. */
const graph = (name: string, w: Float32Array) =>
  encodeOnnxModel({
    graphName: name,
    inputs: [{ name: 'x', type: 'float32', shape: ['B', K] }],
    outputs: [{ name: 'y', type: 'float32', shape: ['B', N] }],
    nodes: [
      { op: 'Mul', inputs: ['x', 'norm'], outputs: ['xn'], name: 'mul' },
      { op: 'MatMul', inputs: ['xn', 'w'], outputs: ['y'], name: 'matmul' },
    ],
    initializers: [
      { name: 'norm', type: 'float32', dims: [K], data: () => NORM },
      { name: 'w', type: 'float32', dims: [K, N], data: () => w },
    ],
    opsets: [{ domain: '', version: 17 }],
  });
const plain = graph('store-fp16', W);

/** fp32 numbers float16 holds exactly, as ORT's Cast reads them back: what the rewritten graph multiplies by. */
async function roundedToFp16(x: Float32Array): Promise<Float32Array> {
  const h = float16Bits(x);
  const s = await ort.InferenceSession.create(
    encodeOnnxModel({
      graphName: 'round',
      inputs: [],
      outputs: [{ name: 'r', type: 'float32', shape: [x.length] }],
      nodes: [{ op: 'Cast', inputs: ['h'], outputs: ['r'], name: 'cast', attrs: { to: { i: 1 } } }],
      initializers: [{ name: 'h', type: 'float16', dims: [x.length], data: () => h }],
      opsets: [{ domain: '', version: 17 }],
    }),
  );
  const r = (await s.run({})).r.data as Float32Array;
  await s.release();
  return r;
}

async function run(model: Uint8Array, x: Float32Array): Promise<Float32Array> {
  const s = await ort.InferenceSession.create(model);
  const y = (await s.run({ x: new ort.Tensor('float32', x, [x.length / K, K]) })).y.data as Float32Array;
  await s.release();
  return y;
}

function initializers(model: Uint8Array): { name: string; type: number }[] {
  const graph = fields(fields(model).find((f) => f.field === MODEL_GRAPH)!.bytes!);
  return graph
    .filter((f) => f.field === GRAPH_INITIALIZER)
    .map((f) => {
      const t = fields(f.bytes!);
      return { name: text(t.find((x) => x.field === 8)?.bytes), type: t.find((x) => x.field === 2)!.value! };
    });
}

describe('storeFp16', () => {
  it('stores the matrix as float16 behind a Cast under its old name and leaves the 1-D weight fp32', () => {
    const { model, report } = storeFp16(plain);
    expect(report.converted).toBe(1);
    expect(report.weightBytes).toBe(K * N * 4);
    expect(initializers(model)).toEqual([
      { name: 'norm', type: 1 },
      { name: 'w_fp16', type: 10 },
    ]);
    const graph = fields(fields(model).find((f) => f.field === MODEL_GRAPH)!.bytes!);
    const first = nodeInfo(graph.find((f) => f.field === GRAPH_NODE)!.bytes!);
    expect(first).toMatchObject({ op: 'Cast', inputs: ['w_fp16'], outputs: ['w'] });
    expect(plain.length - model.length).toBeGreaterThan(K * N * 2 - 200);
  });

  it('computes what the fp32 graph computes with the matrix rounded to float16', async () => {
    const x = seededNormal('store-fp16/x', 3 * K, 1);
    const rounded = await roundedToFp16(W);
    const expected = await run(graph('rounded', rounded), x);
    const got = await run(storeFp16(plain).model, x);
    expect(Array.from(got)).toEqual(Array.from(expected));
    // and the rounding is real: the fp32 graph's answer differs
    expect(Array.from(await run(plain, x))).not.toEqual(Array.from(got));
  });

  it('leaves an already converted model as it is', () => {
    const once = storeFp16(plain).model;
    const twice = storeFp16(once);
    expect(twice.report.converted).toBe(0);
    expect(twice.model).toBe(once);
  });
});
