// Builds the ONNX graph of a Qwen3 / Llama 3 decoder in the Optimum layout, with seeded random weights.
import { checkArch, ropeInvFreq, type DecoderArch } from './decoderArch.ts';
import { GraphBuilder } from './graphBuilder.ts';
import type { ModelSpec } from './onnxWriter.ts';
import { float16Bits, quantizeInt8PerColumn, quantizeInt8PerRow, quantizeQ4 } from './quantizeWeights.ts';
import { seededNormal } from './seededNormal.ts';

/** fp32: plain MatMul; int8: int8 weights through DequantizeLinear; q4: com.microsoft MatMulNBits (4 bits, blocks of 32). The I/O is fp32 in all. */
export type WeightFormat = 'fp32' | 'int8' | 'q4';

export interface DecoderGraphOptions {
  /** Seeds every weight (each weight's numbers depend on this and its name only). */
  seed: string;
  weights?: WeightFormat;
  /** Adds the int64 scalar input `num_logits_to_keep`: logits only for the last that many positions (0: all). */
  logitsToKeep?: boolean;
  /**
   * standard: attention in plain ONNX ops, each present = Concat(past, new, axis 2); gqa: the
   * com.microsoft GroupQueryAttention layout of ORT-GenAI exports (present made by that op).
   */
  attention?: 'standard' | 'gqa';
  /** Each weight's numbers by name (a trained model's, in this builder's layout: linear weights [in, out], the table [rows, hidden]); default: seeded random, norms ones. */
  weightsFrom?: (name: string, count: number) => Float32Array;
  /** fp16: the linear weights and the table stored as float16, each read through a Cast to float32 (ORT folds it at load, so a step computes in fp32 as with fp32 storage). */
  storage?: 'fp32' | 'fp16';
  /**
   * A compact vocabulary: the ids (of arch.vocabSize) the table has rows for, in row order. An id
   * outside them embeds as a zero row; logits still have arch.vocabSize columns, those outside at -1e9.
   */
  vocabIds?: readonly number[];
  /** Adds the output `hidden_states` [batch, sequence_length, hidden]: the last layer after the final norm, every fed position (what router heads read). */
  hiddenStates?: boolean;
}

const WEIGHT_STD = 0.02;
const Q4_BLOCK = 32;
/** The most negative float32: a masked score, so a fully masked row softmaxes to a uniform row, not NaN. */
const MASKED = -3.4028234663852886e38;
const INT64_MAX = Number.MAX_SAFE_INTEGER;

/** One computation read by `readers` initializers (a quantized weight and its scales), made once and let go after the last read. */
function shared<T>(readers: number, make: () => T): () => T {
  let value: T | undefined;
  let left = readers;
  return () => {
    value ??= make();
    const v = value;
    if (--left === 0) value = undefined;
    return v;
  };
}

/** Dims of graph I/O, named as Optimum names them (transformers.js resolves batch_size, and zero for other names, when it makes an empty past). */
const BATCH = 'batch_size';

export function buildDecoderGraph(arch: DecoderArch, opts: DecoderGraphOptions): ModelSpec {
  checkArch(arch);
  const weights = opts.weights ?? 'fp32';
  const gqa = opts.attention === 'gqa';
  const g = new GraphBuilder(`${arch.family}-decoder`);
  const { hiddenSize: H, numHeads: nH, numKvHeads: kv, headDim: hd, intermediateSize: F, vocabSize: V } = arch;
  const group = nH / kv;
  const given = (name: string, count: number): Float32Array => {
    const w = opts.weightsFrom!(name, count);
    if (w.length !== count) throw new Error(`weightsFrom("${name}") gave ${w.length} numbers, the graph needs ${count}`);
    return w;
  };
  const normal = (name: string, count: number) => (opts.weightsFrom ? given(name, count) : seededNormal(`${opts.seed}/${name}`, count, WEIGHT_STD));
  const ones = (name: string, n: number) => () => (opts.weightsFrom ? given(name, n) : new Float32Array(n).fill(1));
  const fp16 = opts.storage === 'fp16';
  if (fp16 && weights !== 'fp32') throw new Error('storage fp16 needs fp32 weights (not int8 or q4)');
  /** A float weight as the graph reads it: the initializer itself, or float16 through a Cast. */
  const floatWeight = (name: string, dims: readonly number[], w: () => Float32Array): string =>
    fp16 ? g.op('Cast', [g.init(name, 'float16', dims, () => float16Bits(w()))], { to: { i: 1 } }) : g.init(name, 'float32', dims, w);
  const ids = opts.vocabIds;
  if (ids) {
    if (weights !== 'fp32' || !arch.tiedEmbeddings) throw new Error('vocabIds needs fp32 weights and a tied LM head');
    const seen = new Set<number>();
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= V || seen.has(id)) throw new Error(`vocabIds: ${id} is not a distinct id in [0, ${V})`);
      seen.add(id);
    }
  }

  const inputIds = g.input('input_ids', 'int64', [BATCH, 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', [BATCH, 'total_sequence_length']);
  const positionIds = g.input('position_ids', 'int64', [BATCH, 'sequence_length']);
  for (let i = 0; i < arch.numLayers; i++) {
    for (const kind of ['key', 'value']) g.input(`past_key_values.${i}.${kind}`, 'float32', [BATCH, kv, 'past_sequence_length', hd]);
  }
  const keep = opts.logitsToKeep ? g.input('num_logits_to_keep', 'int64', []) : undefined;

  /** x [..., K] × W [K, N] in the chosen weight format; W's numbers are those of the fp32 export. */
  const linear = (x: string, name: string, K: number, N: number): string => {
    const w = () => normal(name, K * N);
    if (weights === 'fp32') return g.op('MatMul', [x, floatWeight(name, [K, N], w)]);
    if (weights === 'int8') {
      const made = shared(2, () => quantizeInt8PerColumn(w(), K, N));
      const q = g.init(`${name}_quantized`, 'int8', [K, N], () => made().q);
      const s = g.init(`${name}_scale`, 'float32', [N], () => made().scale);
      return g.op('MatMul', [x, g.op('DequantizeLinear', [q, s], { axis: { i: 1 } })]);
    }
    const blocks = Math.ceil(K / Q4_BLOCK);
    const made = shared(2, () => quantizeQ4(w(), K, N, Q4_BLOCK));
    const b = g.init(`${name}_Q4`, 'uint8', [N, blocks, Q4_BLOCK / 2], () => made().packed);
    const s = g.init(`${name}_scales`, 'float32', [N * blocks], () => made().scales);
    return g.op('MatMulNBits', [x, b, s], { K: { i: K }, N: { i: N }, bits: { i: 4 }, block_size: { i: Q4_BLOCK } }, { domain: 'com.microsoft' });
  };

  /** transformers' RMSNorm over the last axis: x / sqrt(mean(x²) + eps) × weight. */
  const rmsNorm = (x: string, name: string, dim: number): string => {
    const ms = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: { ints: [-1] }, keepdims: { i: 1 } });
    const normed = g.op('Div', [x, g.op('Sqrt', [g.op('Add', [ms, g.f32([arch.rmsNormEps], true)])])]);
    return g.op('Mul', [normed, g.init(name, 'float32', [dim], ones(name, dim))]);
  };

  // -- once per step: sizes, the attention mask, RoPE's cos and sin
  const S = g.op('Gather', [g.op('Shape', [inputIds]), g.i64([1], true)], { axis: { i: 0 } });
  const T = g.op('Gather', [g.op('Shape', [mask]), g.i64([1], true)], { axis: { i: 0 } });
  const P = g.op('Sub', [T, S]);
  const zero = g.i64([0], true);
  const one = g.i64([1], true);
  const qPos = g.op('Add', [g.op('Range', [zero, S, one]), P]);
  const kPos = g.op('Range', [zero, T, one]);
  // key j is seen by query i iff j <= P + i and attention_mask[b, j] is 1 (left padding, holes)
  const causal = g.op('LessOrEqual', [g.op('Unsqueeze', [kPos, g.i64([0])]), g.op('Unsqueeze', [qPos, g.i64([1])])]);
  const padOk = g.op('Unsqueeze', [g.op('Cast', [mask], { to: { i: 9 } }), g.i64([1, 2])]);
  const allowed = g.op('And', [causal, padOk]); // [B, 1, S, T]
  const allowed5 = g.op('Unsqueeze', [allowed, g.i64([1])]); // [B, 1, 1, S, T]
  const invFreq = ropeInvFreq(arch);
  const freqs = g.op('Mul', [
    g.op('Unsqueeze', [g.op('Cast', [positionIds], { to: { i: 1 } }), g.i64([2])]),
    g.init('rope.inv_freq', 'float32', [hd / 2], () => invFreq),
  ]);
  const emb = g.op('Concat', [freqs, freqs], { axis: { i: -1 } }); // [B, S, hd]
  const cos = g.op('Cos', [emb]);
  const sin = g.op('Sin', [emb]);
  // broadcast shapes: k [B, kv, S, hd], q [B, kv, group, S, hd]; gqa: [B, S, heads, hd]
  const [cosK, sinK] = [cos, sin].map((t) => g.op('Unsqueeze', [t, g.i64([1])]));
  const [cosQ, sinQ] = [cos, sin].map((t) => g.op('Unsqueeze', [t, g.i64([1, 2])]));
  const [cosG, sinG] = [cos, sin].map((t) => g.op('Unsqueeze', [t, g.i64([2])]));
  const rope = (x: string, c: string, s: string): string => {
    const x1 = g.op('Slice', [x, g.i64([0]), g.i64([hd / 2]), g.i64([-1])]);
    const x2 = g.op('Slice', [x, g.i64([hd / 2]), g.i64([hd]), g.i64([-1])]);
    const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: { i: -1 } });
    return g.op('Add', [g.op('Mul', [x, c]), g.op('Mul', [rotated, s])]);
  };
  const gqaLens = gqa ? g.op('Cast', [g.op('Sub', [g.op('ReduceSum', [mask, g.i64([1])], { keepdims: { i: 0 } }), one])], { to: { i: 6 } }) : '';
  const gqaTotal = gqa ? g.op('Cast', [T], { to: { i: 6 } }) : '';

  // -- the embedding table, tied or not to the LM head
  const table = 'model.embed_tokens.weight';
  // compact: rows U of the given ids and one zero row (U) that every other id maps to through vocab_map [V]
  const U = ids?.length ?? V;
  const tableData = (): Float32Array => {
    if (!ids) return normal(table, V * H);
    const t = new Float32Array((U + 1) * H);
    t.set(normal(table, U * H));
    return t;
  };
  const tableF32 = weights === 'fp32' ? floatWeight(table, [ids ? U + 1 : V, H], tableData) : g.init(table, 'float32', [V, H], tableData);
  let vocabMap = '';
  let vocabIds = '';
  if (ids) {
    const unused = g.op('ConstantOfShape', [g.i64([V])], {
      value: { t: { name: 'vocab_unused', type: 'int64', dims: [1], data: () => BigInt64Array.of(BigInt(U)) } },
    });
    vocabIds = g.init('vocab_ids', 'int64', [U], () => BigInt64Array.from(ids, (v) => BigInt(v)));
    const rows = g.init('vocab_rows', 'int64', [U], () => BigInt64Array.from({ length: U }, (_, i) => BigInt(i)));
    vocabMap = g.op('ScatterElements', [unused, vocabIds, rows], { axis: { i: 0 } });
  }
  let x = g.op('Gather', [tableF32, ids ? g.op('Gather', [vocabMap, inputIds], { axis: { i: 0 } }) : inputIds], { axis: { i: 0 } });

  for (let i = 0; i < arch.numLayers; i++) {
    const p = `model.layers.${i}`;
    const h = rmsNorm(x, `${p}.input_layernorm.weight`, H);
    let q = g.op('Reshape', [linear(h, `${p}.self_attn.q_proj.weight`, H, nH * hd), g.i64([0, 0, nH, hd])]); // [B, S, nH, hd]
    let k = g.op('Reshape', [linear(h, `${p}.self_attn.k_proj.weight`, H, kv * hd), g.i64([0, 0, kv, hd])]);
    const v = g.op('Reshape', [linear(h, `${p}.self_attn.v_proj.weight`, H, kv * hd), g.i64([0, 0, kv, hd])]);
    if (arch.qkNorm) {
      q = rmsNorm(q, `${p}.self_attn.q_norm.weight`, hd);
      k = rmsNorm(k, `${p}.self_attn.k_norm.weight`, hd);
    }
    const pastK = `past_key_values.${i}.key`;
    const pastV = `past_key_values.${i}.value`;
    const presentK = `present.${i}.key`;
    const presentV = `present.${i}.value`;
    let ctx: string; // [B, S, nH * hd]
    if (gqa) {
      const flat = (t: string) => g.op('Reshape', [t, g.i64([0, 0, -1])]);
      const qr = flat(rope(q, cosG, sinG));
      const kr = flat(rope(k, cosG, sinG));
      ctx = g.ops(
        'GroupQueryAttention',
        [qr, kr, flat(v), pastK, pastV, gqaLens, gqaTotal],
        { num_heads: { i: nH }, kv_num_heads: { i: kv }, scale: { f: 1 / Math.sqrt(hd) } },
        { domain: 'com.microsoft', outputs: [`${p}/gqa_out`, presentK, presentV] },
      )[0];
    } else {
      // q as [B, kv, group, S, hd]: query head h reads KV head h / group (transformers' repeat_kv), by broadcasting
      const q5 = rope(g.op('Transpose', [g.op('Reshape', [q, g.i64([0, 0, kv, group, hd])])], { perm: { ints: [0, 2, 3, 1, 4] } }), cosQ, sinQ);
      const kNew = rope(g.op('Transpose', [k], { perm: { ints: [0, 2, 1, 3] } }), cosK, sinK);
      const vNew = g.op('Transpose', [v], { perm: { ints: [0, 2, 1, 3] } });
      // the runner rewrites exactly this: a 2-input Concat(past, new) on axis 2 makes each present
      g.op('Concat', [pastK, kNew], { axis: { i: 2 } }, { output: presentK });
      g.op('Concat', [pastV, vNew], { axis: { i: 2 } }, { output: presentV });
      const kT = g.op('Unsqueeze', [g.op('Transpose', [presentK], { perm: { ints: [0, 1, 3, 2] } }), g.i64([2])]); // [B, kv, 1, hd, T]
      const scores = g.op('Mul', [g.op('MatMul', [q5, kT]), g.f32([1 / Math.sqrt(hd)], true)]); // [B, kv, group, S, T]
      const probs = g.op('Softmax', [g.op('Where', [allowed5, scores, g.f32([MASKED], true)])], { axis: { i: -1 } });
      const out5 = g.op('MatMul', [probs, g.op('Unsqueeze', [presentV, g.i64([2])])]); // [B, kv, group, S, hd]
      ctx = g.op('Reshape', [g.op('Transpose', [out5], { perm: { ints: [0, 3, 1, 2, 4] } }), g.i64([0, 0, -1])]);
    }
    x = g.op('Add', [x, linear(ctx, `${p}.self_attn.o_proj.weight`, nH * hd, H)]);
    const h2 = rmsNorm(x, `${p}.post_attention_layernorm.weight`, H);
    const gate = linear(h2, `${p}.mlp.gate_proj.weight`, H, F);
    const up = linear(h2, `${p}.mlp.up_proj.weight`, H, F);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, linear(act, `${p}.mlp.down_proj.weight`, F, H)]);
  }
  x = rmsNorm(x, 'model.norm.weight', H);
  // every fed position, before num_logits_to_keep: the runner reads row b's last one at (b * S + S - 1) * H
  if (opts.hiddenStates) g.op('Identity', [x], {}, { output: 'hidden_states' });
  // num_logits_to_keep = n keeps positions [S - n, S): Slice from -n (0 keeps them all, as transformers reads it)
  if (keep) x = g.op('Slice', [x, g.op('Neg', [g.op('Unsqueeze', [keep, g.i64([0])])]), g.i64([INT64_MAX]), g.i64([1])]);
  const logitsShape = g.op('Concat', [g.op('Slice', [g.op('Shape', [x]), g.i64([0]), g.i64([2])]), g.i64([V])], { axis: { i: 0 } });
  if (arch.tiedEmbeddings) {
    // the LM head multiplies by the table itself ([V, H], transposed by Gemm): no second copy
    const x2 = g.op('Reshape', [x, g.i64([-1, H])]);
    const tableWeight = () => normal(table, V * H);
    let logits2: string;
    if (ids) {
      // compact logits [N, U] from the U kept rows, scattered into their ids of a -1e9 fill [N, V]: the per-row
      // cost stays O(U) plus a fill, where a Gather of V columns (one index each) costs ~0.45 ms a row at Qwen3's V
      const kept = g.op('Slice', [tableF32, g.i64([0]), g.i64([U]), g.i64([0])]);
      const compact = g.op('Gemm', [x2, kept], { transB: { i: 1 } });
      const N = g.op('Slice', [g.op('Shape', [x2]), g.i64([0]), g.i64([1])]);
      const fill = g.op('Expand', [g.f32([-1e9], true), g.op('Concat', [N, g.i64([V])], { axis: { i: 0 } })]);
      const columns = g.op('Expand', [vocabIds, g.op('Concat', [N, g.i64([U])], { axis: { i: 0 } })]);
      logits2 = g.op('ScatterElements', [fill, columns, compact], { axis: { i: 1 } });
    } else if (weights === 'fp32') logits2 = g.op('Gemm', [x2, tableF32], { transB: { i: 1 } });
    else if (weights === 'int8') {
      const made = shared(2, () => quantizeInt8PerRow(tableWeight(), V, H));
      const q = g.init('lm_head.weight_quantized', 'int8', [V, H], () => made().q);
      const s = g.init('lm_head.weight_scale', 'float32', [V], () => made().scale);
      logits2 = g.op('Gemm', [x2, g.op('DequantizeLinear', [q, s], { axis: { i: 0 } })], { transB: { i: 1 } });
    } else {
      const blocks = Math.ceil(H / Q4_BLOCK);
      const made = shared(2, () => quantizeQ4(tableWeight(), H, V, Q4_BLOCK, true));
      const b = g.init('lm_head.weight_Q4', 'uint8', [V, blocks, Q4_BLOCK / 2], () => made().packed);
      const s = g.init('lm_head.weight_scales', 'float32', [V * blocks], () => made().scales);
      logits2 = g.op('MatMulNBits', [x2, b, s], { K: { i: H }, N: { i: V }, bits: { i: 4 }, block_size: { i: Q4_BLOCK } }, { domain: 'com.microsoft' });
    }
    g.op('Reshape', [logits2, logitsShape], {}, { output: 'logits' });
  } else {
    g.op('Identity', [linear(x, 'lm_head.weight', H, V)], {}, { output: 'logits' });
  }
  g.output('logits', 'float32', [BATCH, keep ? 'num_logits' : 'sequence_length', V]);
  for (let i = 0; i < arch.numLayers; i++) {
    for (const kind of ['key', 'value']) g.output(`present.${i}.${kind}`, 'float32', [BATCH, kv, 'total_sequence_length', hd]);
  }
  if (opts.hiddenStates) g.output('hidden_states', 'float32', [BATCH, 'sequence_length', H]);
  const domains = weights === 'q4' || gqa ? [{ domain: 'com.microsoft', version: 1 }] : [];
  return g.spec([{ domain: '', version: 17 }, ...domains]);
}
