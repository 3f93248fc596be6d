// The decoder graph builder's compact vocabulary (rows for some ids, logits over all) and fp16 storage give the logits of the plain graph.
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { DecoderArch } from '../support/realShape/decoderArch.ts';
import { buildDecoderGraph, type DecoderGraphOptions } from '../support/realShape/decoderGraph.ts';
import { encodeOnnxModel } from '../support/realShape/onnxWriter.ts';
import { float16Bits } from '../support/realShape/quantizeWeights.ts';
import { seededNormal } from '../support/realShape/seededNormal.ts';

const ARCH: DecoderArch = {
  family: 'qwen3',
  hiddenSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 64,
  vocabSize: 300,
  maxPositions: 4096,
  rmsNormEps: 1e-6,
  ropeTheta: 1_000_000,
  ropeScaling: null,
  tiedEmbeddings: true,
  qkNorm: true,
};
const IDS = [3, 17, 40, 41, 99, 150, 299];
const TABLE = 'model.embed_tokens.weight';

/** Seeded weights by name; the table's rows for `IDS` come from one compact table. */
const compactTable = seededNormal('compact/table', IDS.length * ARCH.hiddenSize, 0.5);
function weightsFrom(name: string, count: number): Float32Array {
  if (name !== TABLE) return seededNormal(`compact/${name}`, count, name.includes('norm') ? 0.1 : 0.05).map((x) => (name.includes('norm') ? 1 + x : x));
  if (count === compactTable.length) return compactTable;
  // the full table: the compact rows at their ids, zeros elsewhere
  const full = new Float32Array(count);
  IDS.forEach((id, row) => full.set(compactTable.subarray(row * ARCH.hiddenSize, (row + 1) * ARCH.hiddenSize), id * ARCH.hiddenSize));
  return full;
}

/** float32 numbers that fp16 holds exactly (what an fp16-stored graph computes with). */
const halfRounded = (x: Float32Array): Float32Array => {
  const h = float16Bits(x);
  const out = new Float32Array(x.length);
  const view = new DataView(new ArrayBuffer(2));
  for (let i = 0; i < h.length; i++) {
    view.setUint16(0, h[i]);
    const b = view.getUint16(0);
    const e = (b >> 10) & 0x1f,
      m = b & 0x3ff,
      s = b & 0x8000 ? -1 : 1;
    out[i] = e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return out;
};

/** Logits [S, V] of one prompt (empty past). */
async function logits(opts: Omit<DecoderGraphOptions, 'seed'>, prompt: number[]): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(encodeOnnxModel(buildDecoderGraph(ARCH, { seed: 'unused', ...opts })), {
    intraOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const S = prompt.length;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, S]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
    position_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: S }, (_, i) => BigInt(i)),
      [1, S],
    ),
  };
  if (opts.logitsToKeep) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(0n), []);
  for (let l = 0; l < ARCH.numLayers; l++) {
    for (const k of ['key', 'value'])
      feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [1, ARCH.numKvHeads, 0, ARCH.headDim]);
  }
  const out = (await session.run(feeds, ['logits'])).logits;
  await session.release();
  expect(out.dims).toEqual([1, S, ARCH.vocabSize]);
  return out.data as Float32Array;
}

describe('decoder graph: compact vocabulary and fp16 storage', () => {
  const prompt = [17, 3, 99, 299, 40];

  it("gives the full table's logits at the kept ids and -1e9 at every other id", async () => {
    const full = await logits({ weightsFrom }, prompt);
    const compact = await logits({ weightsFrom, vocabIds: IDS, logitsToKeep: true }, prompt);
    const kept = new Set(IDS);
    let spread = 0;
    for (let s = 0; s < prompt.length; s++) {
      for (let v = 0; v < ARCH.vocabSize; v++) {
        const i = s * ARCH.vocabSize + v;
        if (kept.has(v)) expect(compact[i]).toBeCloseTo(full[i], 4);
        else expect(compact[i]).toBe(-1e9);
      }
      spread = Math.max(spread, Math.max(...IDS.map((id) => Math.abs(full[s * ARCH.vocabSize + id]))));
    }
    // the kept logits are not all zero: the comparison above compares something
    expect(spread).toBeGreaterThan(1e-3);
  });

  it('embeds an id outside the compact vocabulary as the zero row', async () => {
    const full = await logits({ weightsFrom }, [17, 5]);
    const compact = await logits({ weightsFrom, vocabIds: IDS, logitsToKeep: true }, [17, 5]);
    for (const id of IDS) expect(compact[ARCH.vocabSize + id]).toBeCloseTo(full[ARCH.vocabSize + id], 4);
  });

  it('stores weights fp16 and computes as fp32 with those numbers', async () => {
    const rounded = (name: string, count: number) => (name.includes('norm') ? weightsFrom(name, count) : halfRounded(weightsFrom(name, count)));
    const fp16 = await logits({ weightsFrom, storage: 'fp16' }, prompt);
    const fp32 = await logits({ weightsFrom: rounded }, prompt);
    for (let i = 0; i < fp16.length; i++) expect(fp16[i]).toBeCloseTo(fp32[i], 5);
    const unrounded = await logits({ weightsFrom }, prompt);
    expect(unrounded.some((x, i) => x !== fp16[i])).toBe(true);
  });

  it('emits hidden_states at every fed position, whose last row times the table is the kept logit row', async () => {
    const session = await ort.InferenceSession.create(
      encodeOnnxModel(buildDecoderGraph(ARCH, { seed: 'unused', weightsFrom, vocabIds: IDS, logitsToKeep: true, hiddenStates: true })),
      { intraOpNumThreads: 1, logSeverityLevel: 3 },
    );
    const S = prompt.length;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, S]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: S }, (_, i) => BigInt(i)),
        [1, S],
      ),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
    };
    for (let l = 0; l < ARCH.numLayers; l++) {
      for (const k of ['key', 'value'])
        feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [1, ARCH.numKvHeads, 0, ARCH.headDim]);
    }
    const out = await session.run(feeds, ['logits', 'hidden_states']);
    await session.release();
    const H = ARCH.hiddenSize;
    expect(out.hidden_states.dims).toEqual([1, S, H]);
    expect(out.logits.dims).toEqual([1, 1, ARCH.vocabSize]);
    const hidden = (out.hidden_states.data as Float32Array).subarray((S - 1) * H, S * H);
    const row = out.logits.data as Float32Array;
    IDS.forEach((id, r) => {
      let dot = 0;
      for (let j = 0; j < H; j++) dot += hidden[j] * compactTable[r * H + j];
      expect(row[id]).toBeCloseTo(dot, 4);
    });
    // an earlier position's hidden state differs from the last: all positions are there, not one repeated
    expect(out.hidden_states.data[0]).not.toBe(hidden[0]);
  });

  it('fills each batch row from the kept rows by a scatter, not a Gather over every vocabulary column', async () => {
    const spec = buildDecoderGraph(ARCH, { seed: 'unused', weightsFrom, vocabIds: IDS, logitsToKeep: true, hiddenStates: true, storage: 'fp16' });
    // a Gather of V columns costs O(V) index reads a row; the logits must come from ScatterElements into a fill
    const producer = (name: string) => spec.nodes.find((n) => n.outputs.includes(name));
    const head = producer(producer('logits')!.inputs[0])!;
    expect(head.op).toBe('ScatterElements');
    expect(spec.nodes.filter((n) => n.op === 'Gather' && n.attrs?.axis && 'i' in n.attrs.axis && n.attrs.axis.i !== 0)).toEqual([]);
    const session = await ort.InferenceSession.create(encodeOnnxModel(spec), { intraOpNumThreads: 1, logSeverityLevel: 3 });
    const rows = [
      [17, 3, 99],
      [299, 5, 40],
    ];
    const [B, S, H, V] = [rows.length, rows[0].length, ARCH.hiddenSize, ARCH.vocabSize];
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(rows.flat(), BigInt), [B, S]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(B * S).fill(1n), [B, S]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: B * S }, (_, i) => BigInt(i % S)),
        [B, S],
      ),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
    };
    for (let l = 0; l < ARCH.numLayers; l++) {
      for (const k of ['key', 'value'])
        feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [B, ARCH.numKvHeads, 0, ARCH.headDim]);
    }
    const out = await session.run(feeds, ['logits', 'hidden_states']);
    await session.release();
    expect(out.logits.dims).toEqual([B, 1, V]);
    const logitsB = out.logits.data as Float32Array;
    const hidden = out.hidden_states.data as Float32Array;
    const table = halfRounded(compactTable);
    const row = new Map(IDS.map((id, r) => [id, r]));
    for (let b = 0; b < B; b++) {
      const last = hidden.subarray((b * S + S - 1) * H, (b * S + S) * H);
      for (let v = 0; v < V; v++) {
        const r = row.get(v);
        if (r === undefined) {
          expect(logitsB[b * V + v]).toBe(-1e9);
          continue;
        }
        let dot = 0;
        for (let j = 0; j < H; j++) dot += last[j] * table[r * H + j];
        expect(logitsB[b * V + v]).toBeCloseTo(dot, 4);
      }
    }
    // the two rows differ: each was scattered from its own hidden state, not one row broadcast
    expect(IDS.some((id) => logitsB[id] !== logitsB[V + id])).toBe(true);
  });

  it('refuses vocabIds outside the vocabulary or repeated, and fp16 storage with quantized weights', () => {
    expect(() => buildDecoderGraph(ARCH, { seed: 'x', vocabIds: [1, 1] })).toThrow(/vocabIds: 1 is not a distinct id/);
    expect(() => buildDecoderGraph(ARCH, { seed: 'x', vocabIds: [300] })).toThrow(/vocabIds: 300/);
    expect(() => buildDecoderGraph(ARCH, { seed: 'x', storage: 'fp16', weights: 'int8' })).toThrow(/storage fp16 needs fp32 weights/);
  });
});
