// Real-shape fixtures (Qwen3 / Llama 3 at real vocabulary sizes, built in Node) load in the OnnxRunner and decode as transformers.js does.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { runTsChild } from '../../runtime/util/tsChild.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { encodeOnnxModel } from '../support/realShape/onnxWriter.ts';
import { float16Bits } from '../support/realShape/quantizeWeights.ts';

const NEW_TOKENS = 12;
const TJS_CHILD = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bench/transformersJsGenerate.ts');
const GREEDY = { temperature: 0, topP: 1, topK: 0, seed: 0, suppressEos: true };
const CHATS = ['Hi', 'What is 12*7? Answer with the number only.', 'Écris un haïku sur la mer 🌊, puis traduis-le en 中文.'];

interface Row {
  cacheId: number;
  tokens: number[];
}

/** Greedy decoding through the runner: every row steps together (one left-padded batch), NEW_TOKENS a row; `entropies` gets each step's entropy by row. */
async function greedy(runner: OnnxRunner, prompts: readonly number[][], firstCache: number, entropies: number[][] = []): Promise<number[][]> {
  const rows: (Row & { position: number; out: number[] })[] = prompts.map((p, i) => ({ cacheId: firstCache + i, tokens: p, position: 0, out: [] }));
  for (const _ of rows) entropies.push([]);
  while (rows[0].out.length < NEW_TOKENS) {
    const step = await runner.step(
      rows.map((r) => ({ cacheId: r.cacheId, requestId: `r${r.cacheId}`, tokens: r.tokens, position: r.position, sampling: GREEDY, wants: NO_WANTS })),
    );
    rows.forEach((r, i) => {
      r.position += r.tokens.length;
      r.tokens = [step.rows[i].token];
      r.out.push(step.rows[i].token);
      entropies[i].push(step.rows[i].entropy);
    });
  }
  for (const r of rows) runner.release(r.cacheId);
  return rows.map((r) => r.out);
}

/** transformers.js' batched greedy generate on the folder (local files only, dtype fp32), in a child process of its own. */
async function transformersJs(dir: string, prompts: number[][], padTokenId: number): Promise<number[][]> {
  const job = { warmup: [], prompts, batch: prompts.length, maxTokens: NEW_TOKENS, padTokenId };
  const r = await runTsChild<{ first_batch_tokens: number[][] }>(TJS_CHILD, ['--dir', path.dirname(dir), '--model', path.basename(dir)], {
    what: `transformers.js on ${dir}`,
    stdin: JSON.stringify(job),
  });
  return r.first_batch_tokens;
}

/** Feeds for one prefill of `rows` (left-padded) straight to an ORT session: the runner's I/O contract. */
function prefillFeeds(rows: readonly number[][], numLayers: number, kv: number, hd: number): Record<string, ort.Tensor> {
  const B = rows.length;
  const S = Math.max(...rows.map((r) => r.length));
  const ids = new BigInt64Array(B * S);
  const mask = new BigInt64Array(B * S);
  const pos = new BigInt64Array(B * S);
  rows.forEach((r, b) =>
    r.forEach((t, j) => {
      const at = b * S + S - r.length + j;
      ids[at] = BigInt(t);
      mask[at] = 1n;
      pos[at] = BigInt(j);
    }),
  );
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', ids, [B, S]),
    attention_mask: new ort.Tensor('int64', mask, [B, S]),
    position_ids: new ort.Tensor('int64', pos, [B, S]),
  };
  for (let i = 0; i < numLayers; i++)
    for (const k of ['key', 'value']) feeds[`past_key_values.${i}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [B, kv, 0, hd]);
  return feeds;
}

/** One ORT session per file for the whole file's tests (creating one costs more than a run). */
const sessions = new Map<string, Promise<ort.InferenceSession>>();
afterAll(async () => {
  for (const s of sessions.values()) await (await s).release();
});

async function logitsOf(file: string, feeds: Record<string, ort.Tensor>): Promise<ort.Tensor> {
  if (!sessions.has(file)) sessions.set(file, ort.InferenceSession.create(file, { intraOpNumThreads: 1 }));
  return (await (await sessions.get(file)!).run(feeds, ['logits'])).logits;
}

describe.each([
  { name: 'qwen3-tiny', chat: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n', specials: [151644, 151645] },
  {
    name: 'llama3-tiny',
    chat: '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    specials: [128000, 128006, 128007, 128009],
  },
])('real-shape $name', ({ name, chat, specials }) => {
  let dir: string;
  let runner: OnnxRunner;
  let tokenizer: TextTokenizer;
  let prompts: number[][];
  beforeAll(async () => {
    dir = realShapeFolder(name).dir;
    runner = await OnnxRunner.load(dir, { intraOpNumThreads: 1 });
    tokenizer = TextTokenizer.fromFolder(loadModelFolder(dir));
    // chats all end on the same assistant header, so a random model answers them alike: a plain text too
    prompts = [...CHATS.map((c) => tokenizer.encodeChat([{ role: 'user', content: c }])), tokenizer.encode('Once upon a time, in a land far away,')];
  }, 120_000);
  afterAll(async () => runner?.close());

  it('is read as the real model is: vocabulary, EOS, the new-KV and last-position rewrites of its graph', () => {
    const real = name.startsWith('qwen3') ? { vocabSize: 151936, eos: [151645, 151643] } : { vocabSize: 128256, eos: [128001, 128008, 128009] };
    expect(runner.info.vocabSize).toBe(real.vocabSize);
    // every EOS id of config.json and generation_config.json ends an answer
    expect([...runner.info.eosTokenIds].sort()).toEqual([...real.eos].sort());
    expect(runner.kvOutputs).toBe('new');
    // Qwen3's tied head is Reshape(Gemm(Reshape(h))); Llama 3's untied one is Identity(MatMul(h))
    expect(runner.logitsMode).toBe('sliced');
  });

  it('encodes a chat through the folder’s own template, special tokens as their ids', () => {
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'Hi' }])).toBe(chat);
    const ids = tokenizer.encodeChat([{ role: 'user', content: 'Hi' }]);
    for (const s of specials) expect(ids).toContain(s);
    expect(tokenizer.decode(ids, false)).toBe(chat);
    expect(new Set(prompts.map((p) => p.length)).size).toBeGreaterThan(1);
  });

  it('decodes greedily token for token as transformers.js does, and a left-padded batch as each prompt alone', async () => {
    const alone: number[][] = [];
    const aloneEntropy: number[][] = [];
    for (const [i, p] of prompts.entries()) alone.push((await greedy(runner, [p], 100 + i, aloneEntropy))[0]);
    const batchedEntropy: number[][] = [];
    const batched = await greedy(runner, prompts, 200, batchedEntropy);
    expect(batched).toEqual(alone);
    // the whole distribution, not only its argmax (a tied random model mostly repeats its last token)
    batchedEntropy.flat().forEach((e, i) => expect(e).toBeCloseTo(aloneEntropy.flat()[i], 4));
    const tjs = await transformersJs(dir, prompts, loadModelFolder(dir).config.padTokenId);
    expect(tjs).toEqual(alone);
    // a prompt's answer is its own: the rows do not all decode the same tokens
    expect(new Set(alone.map((a) => a.join(','))).size).toBeGreaterThan(1);
  }, 120_000);

  it('keeps a row exact when its batch peers extend by several tokens (masked holes in its KV)', async () => {
    const [a, b] = [prompts[0], prompts[2]];
    const aloneEntropy: number[][] = [];
    const aloneB = (await greedy(runner, [b], 300, aloneEntropy))[0];
    // A and B prefill together; then A extends by 3 tokens while B decodes one: B's KV gets pad slots between its tokens
    const s0 = await runner.step([
      { cacheId: 310, requestId: 'a', tokens: a, position: 0, sampling: GREEDY, wants: NO_WANTS },
      { cacheId: 311, requestId: 'b', tokens: b, position: 0, sampling: GREEDY, wants: NO_WANTS },
    ]);
    const outB = [s0.rows[1].token];
    const entropyB = [s0.rows[1].entropy];
    let posA = a.length;
    let posB = b.length;
    while (outB.length < NEW_TOKENS) {
      const s = await runner.step([
        { cacheId: 310, requestId: 'a', tokens: [11, 12, 13], position: posA, sampling: GREEDY, wants: NO_WANTS },
        { cacheId: 311, requestId: 'b', tokens: [outB.at(-1)!], position: posB, sampling: GREEDY, wants: NO_WANTS },
      ]);
      posA += 3;
      posB += 1;
      outB.push(s.rows[1].token);
      entropyB.push(s.rows[1].entropy);
    }
    runner.release(310);
    runner.release(311);
    expect(outB).toEqual(aloneB);
    entropyB.forEach((e, i) => expect(e).toBeCloseTo(aloneEntropy[0][i], 4));
  }, 60_000);
});

describe('real-shape variants', () => {
  const cfg = { numLayers: 2, kv: 2, hd: 32 };
  let rows: number[][];
  beforeAll(() => {
    const tok = TextTokenizer.fromFolder(loadModelFolder(realShapeFolder('qwen3-tiny').dir));
    rows = CHATS.slice(0, 2).map((c) => tok.encodeChat([{ role: 'user', content: c }]));
  });

  it('external data (onnx/model.onnx_data) gives the same logits as inline, and the runner decodes it the same', async () => {
    const inline = realShapeFolder('qwen3-tiny').dir;
    const external = realShapeFolder('qwen3-tiny', 'external').dir;
    const feeds = prefillFeeds(rows, cfg.numLayers, cfg.kv, cfg.hd);
    const a = await logitsOf(path.join(inline, 'onnx/model.onnx'), feeds);
    const b = await logitsOf(path.join(external, 'onnx/model.onnx'), feeds);
    expect(b.dims).toEqual(a.dims);
    expect(Buffer.from((b.data as Float32Array).buffer).equals(Buffer.from((a.data as Float32Array).buffer))).toBe(true);
    const r1 = await OnnxRunner.load(inline, { intraOpNumThreads: 1 });
    const r2 = await OnnxRunner.load(external, { intraOpNumThreads: 1 });
    try {
      // the graph is read without its weights and rewritten as an inline one is; the weights stay in model.onnx_data
      expect(r2.kvOutputs).toBe('new');
      expect(await greedy(r2, rows, 1)).toEqual(await greedy(r1, rows, 1));
    } finally {
      await r1.close();
      await r2.close();
    }
  }, 120_000);

  it('num_logits_to_keep keeps the last positions’ logits; a fully masked row yields no NaN', async () => {
    const full = await logitsOf(path.join(realShapeFolder('qwen3-tiny').dir, 'onnx/model.onnx'), prefillFeeds(rows, cfg.numLayers, cfg.kv, cfg.hd));
    const file = path.join(realShapeFolder('qwen3-tiny', 'logits-to-keep').dir, 'onnx/model.onnx');
    const [B, S, V] = full.dims;
    const last = await logitsOf(file, {
      ...prefillFeeds(rows, cfg.numLayers, cfg.kv, cfg.hd),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.from([1n]), []),
    });
    expect(last.dims).toEqual([B, 1, V]);
    const f = full.data as Float32Array;
    for (let b = 0; b < B; b++)
      expect(Array.from((last.data as Float32Array).subarray(b * V, (b + 1) * V))).toEqual(Array.from(f.subarray((b * S + S - 1) * V, (b * S + S) * V)));
    const all = await logitsOf(file, {
      ...prefillFeeds(rows, cfg.numLayers, cfg.kv, cfg.hd),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.from([0n]), []),
    });
    expect(all.dims).toEqual(full.dims);
    const masked = prefillFeeds(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      cfg.numLayers,
      cfg.kv,
      cfg.hd,
    );
    (masked.attention_mask.data as BigInt64Array).fill(0n, 3, 6);
    const m = (await logitsOf(path.join(realShapeFolder('qwen3-tiny').dir, 'onnx/model.onnx'), masked)).data as Float32Array;
    expect(m.every(Number.isFinite)).toBe(true);
  }, 60_000);

  it('quantized files (int8 + DequantizeLinear, q4 MatMulNBits) run with fp32 I/O close to fp32; the gqa file loads with GroupQueryAttention', async () => {
    const feeds = prefillFeeds(rows, cfg.numLayers, cfg.kv, cfg.hd);
    const dir = realShapeFolder('qwen3-tiny', 'quantized').dir;
    const full = (await logitsOf(path.join(dir, 'onnx/model.onnx'), feeds)).data as Float32Array;
    const std = Math.sqrt(full.reduce((a, x) => a + x * x, 0) / full.length);
    for (const [file, tolerance] of [
      ['model_quantized.onnx', 0.05],
      ['model_q4.onnx', 0.3],
    ] as const) {
      const q = (await logitsOf(path.join(dir, 'onnx', file), feeds)).data as Float32Array;
      expect(q.length).toBe(full.length);
      const rms = Math.sqrt(q.reduce((a, x, i) => a + (x - full[i]) ** 2, 0) / q.length);
      // relative error of the logits: int8 per column is near exact, 4 bits in blocks of 32 much coarser
      expect(rms / std).toBeLessThan(tolerance);
      expect(rms).toBeGreaterThan(0);
    }
    const gqa = await ort.InferenceSession.create(path.join(realShapeFolder('qwen3-tiny', 'gqa').dir, 'onnx/model.onnx'), { intraOpNumThreads: 1 });
    expect(gqa.outputNames).toContain('present.1.value');
    await gqa.release();
  }, 120_000);

  it('writes float16 initializers ORT reads back', async () => {
    // biome-ignore lint/suspicious/noApproximativeNumericConstant: a value float16 rounds, not a stand-in for π
    const values = Float32Array.from([0, 1, -2.5, 65504, 1e-3, 3.14159]);
    const model = encodeOnnxModel({
      graphName: 'f16',
      inputs: [{ name: 'x', type: 'float32', shape: [6] }],
      outputs: [{ name: 'y', type: 'float32', shape: [6] }],
      nodes: [
        { op: 'Cast', inputs: ['w'], outputs: ['w32'], name: 'cast', attrs: { to: { i: 1 } } },
        { op: 'Add', inputs: ['x', 'w32'], outputs: ['y'], name: 'add' },
      ],
      initializers: [{ name: 'w', type: 'float16', dims: [6], data: () => float16Bits(values) }],
      opsets: [{ domain: '', version: 17 }],
    });
    const s = await ort.InferenceSession.create(model);
    const y = (await s.run({ x: new ort.Tensor('float32', new Float32Array(6), [6]) })).y.data as Float32Array;
    await s.release();
    expect(Array.from(y)).toEqual([0, 1, -2.5, 65504, 0.0010004043579101562, 3.140625]);
  });
});
