// Bench suite `batch-cost`: a Qwen3-shaped decoder's decode step at one context by batch and intra-op threads, for choosing the bundled family's sizes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { paramCount, type DecoderArch } from '../../test/support/realShape/decoderArch.ts';
import { buildDecoderGraph } from '../../test/support/realShape/decoderGraph.ts';
import { writeOnnxModel } from '../../test/support/realShape/onnxWriter.ts';
import { prepareGraph } from '../runner/graph/prepareGraph.ts';
import { sessionOptions } from '../runner/sessionOptions.ts';
import { TokenRouterError } from '../errors.ts';
import type { Row } from '../util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';

/** A candidate size: `name:hidden/layers/heads/kvHeads/headDim/intermediate`. */
export interface SizeSpec {
  name: string;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
}

/** The sizes tried for the bundled family (docs/models.md, "Bundled family: sizes"). */
export const DEFAULT_SIZES = ['s:256/4/4/2/64/768', 'm:384/6/6/2/64/1152', 'l:640/8/10/2/64/1792', 'xl:768/10/12/2/64/2048'];

export function parseSize(text: string): SizeSpec {
  const m = /^([\w-]+):(\d+)\/(\d+)\/(\d+)\/(\d+)\/(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new TokenRouterError('invalid_request', `--sizes: "${text}" is not name:hidden/layers/heads/kvHeads/headDim/intermediate`, 'sizes');
  const [hidden, layers, heads, kvHeads, headDim, ffn] = m.slice(2).map(Number);
  if (heads % kvHeads !== 0) throw new TokenRouterError('invalid_request', `--sizes: "${text}": kvHeads must divide heads`, 'sizes');
  return { name: m[1], hidden, layers, heads, kvHeads, headDim, ffn };
}

/** Qwen3-0.6B's fixed fields with this size and vocabulary (tied head, q/k norm). */
export function qwen3Arch(s: SizeSpec, vocab: number): DecoderArch {
  return { family: 'qwen3', hiddenSize: s.hidden, numLayers: s.layers, numHeads: s.heads, numKvHeads: s.kvHeads, headDim: s.headDim, intermediateSize: s.ffn, vocabSize: vocab, maxPositions: 40960, rmsNormEps: 1e-6, ropeTheta: 1_000_000, ropeScaling: null, tiedEmbeddings: true, qkNorm: true };
}

/** Median of `xs` (sorted copy). */
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Milliseconds of one decode step (one new token per row after `ctx - 1` cached), median of `reps` after two warm-up steps. */
async function stepMs(session: ort.InferenceSession, a: DecoderArch, fetches: string[], batch: number, ctx: number, reps: number): Promise<number> {
  const past = ctx - 1;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from({ length: batch }, (_, i) => BigInt((i * 7919) % a.vocabSize)), [batch, 1]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * ctx).fill(1n), [batch, ctx]),
    position_ids: new ort.Tensor('int64', new BigInt64Array(batch).fill(BigInt(past)), [batch, 1]),
  };
  const kv = new Float32Array(batch * a.numKvHeads * past * a.headDim);
  for (let i = 0; i < kv.length; i++) kv[i] = Math.sin(i) * 0.5;
  for (let l = 0; l < a.numLayers; l++) {
    for (const k of ['key', 'value']) feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', kv, [batch, a.numKvHeads, past, a.headDim]);
  }
  const times: number[] = [];
  for (let r = 0; r < reps + 2; r++) {
    const t0 = performance.now();
    await session.run(feeds, fetches);
    if (r >= 2) times.push(performance.now() - t0);
  }
  return median(times);
}

export interface CostRow {
  size: string;
  vocab: number;
  params: number;
  fp16MB: number;
  threads: number;
  ms: Record<number, number>;
}

/** Builds each size at each vocabulary (random weights) and times its step; `onRow` hears of each row as it is done. */
export async function measureBatchCost(sizes: SizeSpec[], vocabs: number[], batches: number[], threads: number[], ctx: number, reps: number, onRow?: (r: CostRow) => void): Promise<CostRow[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'batch-cost-'));
  const rows: CostRow[] = [];
  try {
    for (const s of sizes) {
      for (const vocab of vocabs) {
        const a = qwen3Arch(s, vocab);
        const file = path.join(dir, `${s.name}-${vocab}.onnx`);
        writeOnnxModel(file, buildDecoderGraph(a, { seed: `batch-cost/${s.name}` }));
        const present = Array.from({ length: a.numLayers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat();
        // the runner's own rewrite: new KV slots as outputs, logits at the last position, no signal nodes
        const prepared = prepareGraph(fs.readFileSync(file), { present, newKv: true, vocab, signals: false });
        fs.rmSync(file);
        const fetches = ['logits', ...(prepared.newNames ?? present)];
        for (const t of threads) {
          const session = await ort.InferenceSession.create(prepared.model, { ...sessionOptions(t), logSeverityLevel: 3 });
          const ms: Record<number, number> = {};
          for (const b of batches) ms[b] = await stepMs(session, a, fetches, b, ctx, reps);
          await session.release();
          const params = paramCount(a);
          const row = { size: s.name, vocab, params, fp16MB: (params * 2) / 1e6, threads: t, ms };
          rows.push(row);
          onRow?.(row);
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const sizes = f.list('sizes', DEFAULT_SIZES).map(parseSize);
  const vocabs = f.nums('vocabs', [4096, 32000]);
  const batches = f.nums('batches', [1, 8, 16]);
  const threads = f.nums('threads', [1, 2]);
  const ctx = f.num('ctx', 256);
  const reps = f.sized('reps', 15, 3);
  for (const [k, list] of [['vocabs', vocabs], ['batches', batches], ['threads', threads], ['ctx', [ctx]], ['reps', [reps]]] as const) {
    for (const v of list) if (!(Number.isInteger(v) && v > 0)) throw new TokenRouterError('invalid_request', `--${k} must hold positive integers (got ${v})`, k);
  }
  const b1 = batches[0];
  const rows = await measureBatchCost(sizes, vocabs, batches, threads, ctx, reps, (r) => {
    process.stderr.write(`batch-cost ${r.size} V=${r.vocab} threads=${r.threads}: ${batches.map((b) => `B${b} ${r.ms[b].toFixed(2)} ms`).join(', ')}\n`);
  });
  const table: Row[] = rows.map((r) => {
    const row: Row = { size: r.size, V: r.vocab, 'params (M)': (r.params / 1e6).toFixed(1), 'fp16 MB': r.fp16MB.toFixed(1), threads: r.threads };
    for (const b of batches) row[`B=${b} ms`] = r.ms[b].toFixed(2);
    for (const b of batches.slice(1)) row[`B=${b} / B=${b1}`] = (r.ms[b] / r.ms[b1]).toFixed(2);
    return row;
  });
  const settings = { ctx, reps, batches, threads, vocabs, sizes, node: process.version, cpus: os.cpus().length, graph: 'Qwen3 (tied head, q/k norm), random fp32 weights, runner rewrite (new KV outputs, last-position logits, no signal nodes)' };
  return {
    suite: 'batch-cost',
    settings,
    results: { rows },
    output: { tables: { 'batch-cost': table }, notes: [`decode step at context ${ctx} (one new token after ${ctx - 1} cached), median of ${reps} after 2 warm-up steps; ORT session as the runner makes it`] },
  };
}
