// Bench suite `batch-cost`: a Qwen3-shaped decoder's decode step at one context by batch and intra-op threads, for choosing the bundled family's sizes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { paramCount, type DecoderArch } from '../support/realShape/decoderArch.ts';
import { buildDecoderGraph } from '../support/realShape/decoderGraph.ts';
import { writeOnnxModel } from '../support/realShape/onnxWriter.ts';
import { prepareGraph } from '../../runtime/runner/graph/prepareGraph.ts';
import { sessionOptions } from '../../runtime/runner/sessionOptions.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import type { Row } from '../../runtime/util/table.ts';
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

/** The bundled family's sizes, and xl for comparison (docs/models.md, "Bundled family: sizes"). */
export const DEFAULT_SIZES = ['small:160/3/2/1/64/480', 'medium:320/5/5/1/64/960', 'large:512/7/8/1/64/1536', 'xl:640/8/10/2/64/1792'];

export function parseSize(text: string): SizeSpec {
  const m = /^([\w-]+):(\d+)\/(\d+)\/(\d+)\/(\d+)\/(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new TokenRouterError('invalid_request', `--sizes: "${text}" is not name:hidden/layers/heads/kvHeads/headDim/intermediate`, 'sizes');
  const [hidden, layers, heads, kvHeads, headDim, ffn] = m.slice(2).map(Number);
  if (heads % kvHeads !== 0) throw new TokenRouterError('invalid_request', `--sizes: "${text}": kvHeads must divide heads`, 'sizes');
  return { name: m[1], hidden, layers, heads, kvHeads, headDim, ffn };
}

/** Qwen3-0.6B's fixed fields with this size and vocabulary (tied head, q/k norm). */
export function qwen3Arch(s: SizeSpec, vocab: number): DecoderArch {
  return {
    family: 'qwen3',
    hiddenSize: s.hidden,
    numLayers: s.layers,
    numHeads: s.heads,
    numKvHeads: s.kvHeads,
    headDim: s.headDim,
    intermediateSize: s.ffn,
    vocabSize: vocab,
    maxPositions: 40960,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    ropeScaling: null,
    tiedEmbeddings: true,
    qkNorm: true,
  };
}

/** Median of `xs` (sorted copy). */
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Feeds of one step: `fed` new tokens per row (1: a decode step) after `ctx - fed` cached. */
function stepFeeds(a: DecoderArch, batch: number, ctx: number, keep: boolean, fed = 1): Record<string, ort.Tensor> {
  const past = ctx - fed;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: batch * fed }, (_, i) => BigInt((i * 7919) % a.vocabSize)),
      [batch, fed],
    ),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * ctx).fill(1n), [batch, ctx]),
    position_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: batch * fed }, (_, i) => BigInt(past + (i % fed))),
      [batch, fed],
    ),
  };
  if (keep) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  const kv = new Float32Array(batch * a.numKvHeads * past * a.headDim);
  for (let i = 0; i < kv.length; i++) kv[i] = Math.sin(i) * 0.5;
  for (let l = 0; l < a.numLayers; l++) {
    for (const k of ['key', 'value']) feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', kv, [batch, a.numKvHeads, past, a.headDim]);
  }
  return feeds;
}

/** Tokens the prefill pass feeds (one row), to time a token fed beyond a step's fixed cost. */
export const PREFILL_TOKENS = 64;

/**
 * Each batch's decode step time, and one row's prefill of PREFILL_TOKENS, taken in turn round after
 * round (so a burst of load from other processes falls on all of them alike): median and minimum
 * over `reps` rounds after two warm-up rounds. The prefill's times are under key 0.
 */
async function stepTimes(
  session: ort.InferenceSession,
  a: DecoderArch,
  fetches: string[],
  batches: number[],
  ctx: number,
  reps: number,
  keep: boolean,
): Promise<{ median: Record<number, number>; min: Record<number, number> }> {
  const feeds = [...batches.map((b) => stepFeeds(a, b, ctx, keep)), stepFeeds(a, 1, ctx, keep, PREFILL_TOKENS)];
  batches = [...batches, 0];
  const times = batches.map(() => [] as number[]);
  for (let r = 0; r < reps + 2; r++) {
    for (let i = 0; i < batches.length; i++) {
      const t0 = performance.now();
      await session.run(feeds[i], fetches);
      if (r >= 2) times[i].push(performance.now() - t0);
    }
  }
  return {
    median: Object.fromEntries(batches.map((b, i) => [b, median(times[i])])),
    min: Object.fromEntries(batches.map((b, i) => [b, Math.min(...times[i])])),
  };
}

/** A vocabulary to try: `V` (a full table of V rows) or `V/U` (V ids, a compact table of U rows: graph option vocabIds). */
export interface VocabSpec {
  V: number;
  rows?: number;
}

export function parseVocab(text: string): VocabSpec {
  const m = /^(\d+)(?:\/(\d+))?$/.exec(text.trim());
  const V = m ? Number(m[1]) : NaN;
  const rows = m?.[2] === undefined ? undefined : Number(m[2]);
  if (!m || V < 2 || (rows !== undefined && (rows < 1 || rows > V)))
    throw new TokenRouterError('invalid_request', `--vocabs: "${text}" is not V or V/rows (rows <= V)`, 'vocabs');
  return { V, rows };
}

/** `rows` ids spread over [0, V) (which ids does not change the cost). */
const spreadIds = (V: number, rows: number): number[] => Array.from({ length: rows }, (_, i) => Math.floor((i * V) / rows));

/** One prefill token's cost beyond a step's fixed cost: the prefill pass less the B=`b1` decode step, per token past the first. */
export function prefillTokenMs(r: Pick<CostRow, 'ms'>, b1: number): number {
  return (r.ms[0] - r.ms[b1]) / (PREFILL_TOKENS - 1);
}

export interface CostRow {
  size: string;
  vocab: string;
  params: number;
  /** The model.onnx file's size. */
  fileMB: number;
  threads: number;
  /** Median step ms by batch; key 0: one row's prefill of PREFILL_TOKENS. */
  ms: Record<number, number>;
  minMs: Record<number, number>;
}

/** Builds each size at each vocabulary (random weights) and times its step; `onRow` hears of each row as it is done. */
export async function measureBatchCost(
  sizes: SizeSpec[],
  vocabs: VocabSpec[],
  batches: number[],
  threads: number[],
  ctx: number,
  reps: number,
  storage: 'fp32' | 'fp16',
  onRow?: (r: CostRow) => void,
): Promise<CostRow[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'batch-cost-'));
  const rows: CostRow[] = [];
  try {
    for (const s of sizes) {
      for (const vs of vocabs) {
        const vocab = vs.V;
        const a = qwen3Arch(s, vocab);
        const file = path.join(dir, `${s.name}-${vocab}.onnx`);
        const compact = vs.rows !== undefined;
        // a compact head (its rows scattered into a -1e9 fill of V columns) takes num_logits_to_keep, as the exporter's folders do
        const written = writeOnnxModel(
          file,
          buildDecoderGraph(a, { seed: `batch-cost/${s.name}`, storage, vocabIds: compact ? spreadIds(vocab, vs.rows!) : undefined, logitsToKeep: compact }),
        );
        const present = Array.from({ length: a.numLayers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat();
        // the runner's own rewrite: new KV slots as outputs, logits at the last position, no signal nodes
        const prepared = prepareGraph(fs.readFileSync(file), { present, newKv: true, vocab, signals: false });
        fs.rmSync(file);
        const fetches = ['logits', ...(prepared.newNames ?? present)];
        for (const t of threads) {
          const session = await ort.InferenceSession.create(prepared.model, { ...sessionOptions(t), logSeverityLevel: 3 });
          const { median: ms, min: minMs } = await stepTimes(session, a, fetches, batches, ctx, reps, compact);
          await session.release();
          const params = paramCount({ ...a, vocabSize: vs.rows ?? vocab });
          const row = { size: s.name, vocab: compact ? `${vocab}/${vs.rows}` : String(vocab), params, fileMB: written.modelBytes / 1e6, threads: t, ms, minMs };
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
  const vocabs = f.list('vocabs', ['151936/327']).map(parseVocab);
  const storage = f.str('storage', 'fp32');
  if (storage !== 'fp32' && storage !== 'fp16') throw new TokenRouterError('invalid_request', `--storage must be fp32 or fp16, got "${storage}"`, 'storage');
  const batches = f.nums('batches', [1, 8, 16]);
  const threads = f.nums('threads', [1, 2]);
  const ctx = f.num('ctx', 256);
  const reps = f.sized('reps', 15, 3);
  for (const [k, list] of [
    ['batches', batches],
    ['threads', threads],
    ['ctx', [ctx]],
    ['reps', [reps]],
  ] as const) {
    for (const v of list)
      if (!(Number.isInteger(v) && v > 0)) throw new TokenRouterError('invalid_request', `--${k} must hold positive integers (got ${v})`, k);
  }
  if (ctx <= PREFILL_TOKENS)
    throw new TokenRouterError('invalid_request', `--ctx must exceed the ${PREFILL_TOKENS} tokens the prefill pass feeds (got ${ctx})`, 'ctx');
  const b1 = batches[0];
  const bTop = batches.includes(8) ? 8 : batches[batches.length - 1];
  const rows = await measureBatchCost(sizes, vocabs, batches, threads, ctx, reps, storage, (r) => {
    process.stderr.write(
      `batch-cost ${r.size} V=${r.vocab} threads=${r.threads}: ${batches.map((b) => `B${b} ${r.ms[b].toFixed(2)} (min ${r.minMs[b].toFixed(2)}) ms`).join(', ')}, prefill ${PREFILL_TOKENS} ${r.ms[0].toFixed(2)} ms\n`,
    );
  });
  const table: Row[] = rows.map((r) => {
    const row: Row = { size: r.size, vocab: r.vocab, 'params (M)': (r.params / 1e6).toFixed(1), 'file MB': r.fileMB.toFixed(1), threads: r.threads };
    for (const b of batches) row[`B=${b} ms`] = r.ms[b].toFixed(2);
    for (const b of batches.slice(1)) row[`B=${b} / B=${b1}`] = (r.ms[b] / r.ms[b1]).toFixed(2);
    for (const b of batches.slice(1)) row[`min B=${b} / B=${b1}`] = (r.minMs[b] / r.minMs[b1]).toFixed(2);
    const fed = prefillTokenMs(r, b1);
    row['prefill ms/token'] = fed.toFixed(3);
    row[`B=${bTop} ms/token ÷ prefill`] = (r.ms[bTop] / bTop / fed).toFixed(2);
    return row;
  });
  const settings = {
    ctx,
    reps,
    batches,
    threads,
    vocabs,
    sizes,
    storage,
    loadAverage: os.loadavg(),
    node: process.version,
    cpus: os.cpus().length,
    graph: 'Qwen3 (tied head, q/k norm), random fp32 weights, runner rewrite (new KV outputs, last-position logits, no signal nodes)',
  };
  return {
    suite: 'batch-cost',
    settings,
    results: { rows },
    output: {
      tables: { 'batch-cost': table },
      notes: [
        `decode step at context ${ctx} (one new token after ${ctx - 1} cached), batches in turn, median (and min) of ${reps} rounds after 2 warm-up rounds; weights stored ${storage}; V/rows: compact table of rows ids; ORT session as the runner makes it`,
        `prefill ms/token: one row feeding ${PREFILL_TOKENS} tokens at the same context, beyond the B=${b1} decode step, per token (a catch-up's cost once the pass's fixed cost is paid); B=${bTop} ms/token ÷ prefill: a decode token at B=${bTop} in prefill tokens, the most a routed large that must catch up on every token can gain over serving the large alone`,
      ],
    },
  };
}
