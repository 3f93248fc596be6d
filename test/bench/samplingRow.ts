// Bench suite `sampling` (`npm run bench -- sampling [--vocab 151936] [--reps 200] [--batch 8]`, or this file run directly): JavaScript time per row for signals and the draw, the old analyzeRow beside the signal nodes' path, and ORT's time for those nodes.
import * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { concat, FLOAT, GRAPH_INPUT, MODEL_GRAPH, valueInfo, wrap } from '../../runtime/runner/graph/onnxProto.ts';
import { signalHead } from '../../runtime/runner/graph/signalHead.ts';
import { sessionOptions } from '../../runtime/runner/onnxRunner.ts';
import { analyzeHead, type AnalyzeOptions } from '../../runtime/runner/sampling.ts';
import { headRow, planHead } from '../../runtime/runner/stepHead.ts';
import type { SamplingParams, StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { textTable, type Row } from '../../runtime/util/table.ts';
import { legacyAnalyzeRow } from './legacyAnalyzeRow.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { TokenRouterError } from '../../runtime/errors.ts';

/** Seeded logits: flat (Gaussian std 0.3, as random-weight models give) or peaked (the same plus one token at +15 and eight at +10). */
function logits(V: number, kind: 'flat' | 'peaked', seed: number): Float32Array {
  let a = seed >>> 0;
  const rnd = (): number => {
    a = (a * 1103515245 + 12345) >>> 0;
    return (a + 0.5) / 4294967296;
  };
  const x = new Float32Array(V);
  for (let i = 0; i < V; i++) x[i] = 0.3 * Math.sqrt(-2 * Math.log(rnd())) * Math.cos(2 * Math.PI * rnd());
  if (kind === 'peaked') {
    x[(seed * 7919) % V] += 15;
    for (let j = 1; j <= 8; j++) x[(seed * 7919 + j * 104729) % V] += 10;
  }
  return x;
}

/** The signal nodes alone over a [B, 1, V] input, as the runner's graph has them after a sliced LM head. */
async function headSession(V: number): Promise<ort.InferenceSession> {
  const w = protobuf.Writer.create();
  w.uint32(1 << 3).int64(8);
  w.uint32((8 << 3) | 2)
    .fork()
    .uint32((1 << 3) | 2)
    .string('')
    .uint32(2 << 3)
    .int64(14)
    .ldelim();
  const graph = concat([valueInfo(GRAPH_INPUT, 'logits', FLOAT), ...signalHead('logits', { opset: 14, vocab: V, lastOnly: true })]);
  return ort.InferenceSession.create(concat([w.finish(), wrap(MODEL_GRAPH, graph)]), { ...sessionOptions(1), logSeverityLevel: 3 });
}

const ms = (t0: number, n: number): number => (performance.now() - t0) / n;

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const V = f.num('vocab', 151936);
  const REPS = f.sized('reps', 200, 20);
  const B = f.num('batch', 8);
  for (const [k, v] of [
    ['vocab', V],
    ['reps', REPS],
    ['batch', B],
  ] as const) {
    if (!(Number.isInteger(v) && v > 0)) throw new TokenRouterError('invalid_request', `--${k} must be a positive integer (got ${v})`, k);
  }
  const session = await headSession(V);
  const cases: { name: string; s: SamplingParams; kind: 'flat' | 'peaked'; signals: boolean }[] = [];
  for (const kind of ['flat', 'peaked'] as const) {
    for (const signals of [true, false]) {
      const tag = signals ? '' : ', signals unread';
      cases.push({ name: `greedy, ${kind}${tag}`, kind, signals, s: { temperature: 0, topP: 1, topK: 0, seed: 1 } });
      cases.push({ name: `temperature 0.8, ${kind}${tag}`, kind, signals, s: { temperature: 0.8, topP: 1, topK: 0, seed: 1 } });
      cases.push({ name: `temperature 0.8 + top_p 0.9, ${kind}${tag}`, kind, signals, s: { temperature: 0.8, topP: 0.9, topK: 0, seed: 1 } });
    }
  }
  const table: Row[] = [];
  const results: Record<string, unknown>[] = [];
  for (const c of cases) {
    const rows = Array.from({ length: B }, (_, b) => logits(V, c.kind, 1 + b));
    const opts = (b: number): AnalyzeOptions => ({ sampling: c.s, position: 100 + b, model: 'bench', topK: 0 });
    // old: the whole row in JavaScript (top_p sorts the vocabulary: fewer repetitions); it always computes the signals
    let oldMs = NaN;
    if (c.signals) {
      const oldReps = c.s.topP < 1 ? Math.max(2, Math.floor(REPS / 20)) : REPS;
      for (let b = 0; b < B; b++) legacyAnalyzeRow(rows[b], opts(b));
      const t = performance.now();
      for (let r = 0; r < oldReps; r++) legacyAnalyzeRow(rows[r % B], opts(r % B));
      oldMs = ms(t, oldReps);
    }
    // new: the signal nodes' outputs for a batch of B rows, then the JavaScript per row
    const wants = c.signals ? NO_WANTS : { ...NO_WANTS, signals: false };
    const stepRows: StepRow[] = rows.map((_, b) => ({ cacheId: b, requestId: `r${b}`, tokens: [1], position: 99 + b, sampling: c.s, wants }));
    const inputs: Record<string, ort.Tensor> = {};
    const plan = planHead(
      stepRows,
      [...stepRows.keys()],
      stepRows.map((r) => r.tokens),
      { V, model: 'bench', eosIds: [], topLogitsK: 0, lengths: stepRows.map((r) => r.position) },
      inputs,
    );
    const all = new Float32Array(B * V);
    rows.forEach((x, b) => all.set(x, b * V));
    inputs.logits = new ort.Tensor('float32', all, [B, 1, V]);
    let out = await session.run(inputs, plan.fetches);
    const ortReps = Math.max(3, Math.floor(REPS / 20));
    let t0 = performance.now();
    for (let r = 0; r < ortReps; r++) out = await session.run(inputs, plan.fetches);
    const ortMs = ms(t0, ortReps) / B;
    for (let b = 0; b < B; b++) analyzeHead(headRow(out, b, plan, V, undefined), V, opts(b));
    t0 = performance.now();
    for (let r = 0; r < REPS; r++) {
      const b = r % B;
      analyzeHead(headRow(out, b, plan, V, undefined), V, opts(b));
    }
    const newMs = ms(t0, REPS);
    results.push({ case: c.name, oldJsMsPerRow: oldMs, newJsMsPerRow: newMs, ortMsPerRow: ortMs, K: plan.K, fetches: plan.fetches });
    const fmt = (x: number): string => (Number.isNaN(x) ? '-' : x.toFixed(4));
    table.push({
      case: c.name,
      'old JS ms/row': fmt(oldMs),
      'new JS ms/row': fmt(newMs),
      'ORT signal nodes + fetch ms/row': fmt(ortMs),
      'new total ms/row': fmt(newMs + ortMs),
      K: plan.K,
      fetches: plan.fetches.length,
    });
  }
  await session.release();
  const settings = {
    vocab: V,
    batch: B,
    reps: REPS,
    ortThreads: 1,
    node: process.version,
    logits: 'seeded: flat = Gaussian std 0.3; peaked = the same plus one token at +15 and eight at +10',
  };
  return {
    suite: 'sampling',
    settings,
    results: { rows: results },
    output: {
      tables: { sampling: table },
      notes: [`V = ${V}, batch ${B}, ${REPS} repetitions (old top_p: ${Math.max(2, Math.floor(REPS / 20))}); one ORT thread; node ${process.version}`],
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { vocab: { type: 'string' }, reps: { type: 'string' }, batch: { type: 'string' } } });
  const flags = Object.fromEntries(Object.entries(values).filter((kv): kv is [string, string] => typeof kv[1] === 'string'));
  const r = await run({ flags });
  console.log(r.output!.notes!.join('\n'));
  console.log(textTable(r.output!.tables.sampling));
}
