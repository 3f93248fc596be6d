// `npx tsx runtime/bench/samplingRow.ts [--vocab 151936] [--reps 200]`: JavaScript time per row for signals and the draw, the old analyzeRow beside the signal nodes' path, and ORT's time for those nodes.
import * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';
import { parseArgs } from 'node:util';
import { concat, FLOAT, GRAPH_INPUT, MODEL_GRAPH, valueInfo, wrap } from '../runner/graph/onnxProto.ts';
import { signalHead } from '../runner/graph/signalHead.ts';
import { sessionOptions } from '../runner/onnxRunner.ts';
import { analyzeHead, type AnalyzeOptions } from '../runner/sampling.ts';
import { headRow, planHead } from '../runner/stepHead.ts';
import type { SamplingParams, StepRow } from '../runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { textTable, type Row } from '../util/table.ts';
import { legacyAnalyzeRow } from './legacyAnalyzeRow.ts';

const { values } = parseArgs({ options: { vocab: { type: 'string', default: '151936' }, reps: { type: 'string', default: '200' }, batch: { type: 'string', default: '8' } } });
const V = Number(values.vocab);
const REPS = Number(values.reps);
const B = Number(values.batch);
for (const [k, v] of [['vocab', V], ['reps', REPS], ['batch', B]] as const) if (!(Number.isInteger(v) && v > 0)) throw new Error(`--${k} must be a positive integer (got ${String(values[k])})`);

/** Seeded logits: flat (Gaussian std 0.3, as random-weight models give) or peaked (the same plus one token at +15 and eight at +10). */
function logits(kind: 'flat' | 'peaked', seed: number): Float32Array {
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
async function headSession(): Promise<ort.InferenceSession> {
  const w = protobuf.Writer.create();
  w.uint32(1 << 3).int64(8);
  w.uint32((8 << 3) | 2).fork().uint32((1 << 3) | 2).string('').uint32(2 << 3).int64(14).ldelim();
  const graph = concat([valueInfo(GRAPH_INPUT, 'logits', FLOAT), ...signalHead('logits', { opset: 14, vocab: V, lastOnly: true })]);
  return ort.InferenceSession.create(concat([w.finish(), wrap(MODEL_GRAPH, graph)]), { ...sessionOptions(1), logSeverityLevel: 3 });
}

const ms = (t0: number, n: number): string => ((performance.now() - t0) / n).toFixed(4);

async function main(): Promise<void> {
  const session = await headSession();
  const cases: { name: string; s: SamplingParams; kind: 'flat' | 'peaked' }[] = [];
  for (const kind of ['flat', 'peaked'] as const) {
    cases.push({ name: `greedy, ${kind}`, kind, s: { temperature: 0, topP: 1, topK: 0, seed: 1 } });
    cases.push({ name: `temperature 0.8, ${kind}`, kind, s: { temperature: 0.8, topP: 1, topK: 0, seed: 1 } });
    cases.push({ name: `temperature 0.8 + top_p 0.9, ${kind}`, kind, s: { temperature: 0.8, topP: 0.9, topK: 0, seed: 1 } });
  }
  const table: Row[] = [];
  for (const c of cases) {
    const rows = Array.from({ length: B }, (_, b) => logits(c.kind, 1 + b));
    const opts = (b: number): AnalyzeOptions => ({ sampling: c.s, position: 100 + b, model: 'bench', topK: 0 });
    // old: the whole row in JavaScript (top_p sorts the vocabulary: fewer repetitions)
    const oldReps = c.s.topP < 1 ? Math.max(2, Math.floor(REPS / 20)) : REPS;
    for (let b = 0; b < B; b++) legacyAnalyzeRow(rows[b], opts(b));
    let t0 = performance.now();
    for (let r = 0; r < oldReps; r++) legacyAnalyzeRow(rows[r % B], opts(r % B));
    const oldMs = ms(t0, oldReps);
    // new: the signal nodes' outputs for a batch of B rows, then the JavaScript per row
    const stepRows: StepRow[] = rows.map((_, b) => ({ cacheId: b, requestId: `r${b}`, tokens: [1], position: 99 + b, sampling: c.s, wants: NO_WANTS }));
    const inputs: Record<string, ort.Tensor> = {};
    const plan = planHead(stepRows, [...stepRows.keys()], stepRows.map((r) => r.tokens), { V, model: 'bench', eosIds: [], topLogitsK: 0, lengths: stepRows.map((r) => r.position) }, inputs);
    const all = new Float32Array(B * V);
    rows.forEach((x, b) => all.set(x, b * V));
    inputs.logits = new ort.Tensor('float32', all, [B, 1, V]);
    let out = await session.run(inputs, plan.fetches);
    const ortReps = Math.max(3, Math.floor(REPS / 20));
    t0 = performance.now();
    for (let r = 0; r < ortReps; r++) out = await session.run(inputs, plan.fetches);
    const ortMs = ((performance.now() - t0) / ortReps / B).toFixed(4);
    let fallbacks = 0;
    for (let b = 0; b < B; b++) analyzeHead(headRow(out, b, plan, V, undefined), V, opts(b));
    t0 = performance.now();
    for (let r = 0; r < REPS; r++) {
      const b = r % B;
      const h = headRow(out, b, plan, V, undefined);
      analyzeHead(h, V, opts(b));
    }
    const newMs = ms(t0, REPS);
    // how many rows drew past the candidates (the exact fallback over the row): timed apart
    let fbMs = '-';
    if (c.s.topP < 1) {
      const probe = (b: number): boolean => {
        const h = headRow(out, b, plan, V, undefined);
        delete h.weights;
        try {
          analyzeHead(h, V, opts(b));
          return false;
        } catch {
          return true;
        }
      };
      for (let b = 0; b < B; b++) if (probe(b)) fallbacks++;
      fbMs = `${fallbacks}/${B}`;
    }
    table.push({ case: c.name, 'old JS ms/row': oldMs, 'new JS ms/row': newMs, 'ORT signal nodes + fetch ms/row': ortMs, 'rows past the candidates': fbMs, K: plan.K, fetches: plan.fetches.length });
  }
  console.log(`V = ${V}, batch ${B}, ${REPS} repetitions (old top_p: ${Math.max(2, Math.floor(REPS / 20))}); one ORT thread; node ${process.version}`);
  console.log(textTable(table));
  await session.release();
}

await main();
