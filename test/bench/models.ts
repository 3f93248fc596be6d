// Bench suite "models": per-model step latency by batch and context, time outside session.run, and two-worker overlap.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { WorkerRunner } from '../../runtime/runner/workerRunner.ts';
import { GREEDY, type ModelRunner, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { kvFetchCost, type KvFetchCost } from './kvFetchCost.ts';

const median = (xs: readonly number[]): number => percentile(xs, 50);

export interface ModelsBenchRow {
  model: string;
  batch: number;
  ctx: number;
  step_ms: number;
  outside_run_fraction: number;
}

export interface ModelsBenchResult {
  suite: string;
  settings: Record<string, unknown>;
  results: {
    rows: ModelsBenchRow[];
    parallel_ratio: number;
    kv_fetch: KvFetchCost[];
    parallel: {
      model_a: string;
      model_b: string;
      batch: number;
      ctx: number;
      steps: number;
      steps_a: number;
      serial_ms: number;
      parallel_ms: number;
      rounds_serial_ms: number[];
      rounds_parallel_ms: number[];
      cores_busy_together: number;
    };
  };
}

const MODELS = ['small', 'medium', 'large'];
const BATCHES = [1, 4, 16, 32];
const WARMUP = 3;
const MEASURE = 24;
/** Serial and parallel runs alternate this many times; the medians are compared (the machine is shared). */
const ROUNDS = 5;
/** The KV-fetch cell: the served small model's usual decode batch (c = 8) at a mid-length context. */
const KV_FETCH = { batch: 8, ctx: 150, steps: 300, rounds: 6 };

/** A synthetic prompt of digits: latency does not depend on token values. */
const synthetic = (n: number, salt: number): number[] => Array.from({ length: n }, (_, i) => 4 + ((i * 7 + salt * 13) % 10));

/** Prefills `batch` caches so that the measured decode steps end at context `ctx`, then times them. */
/** Median step time, and the share of all timed wall time spent outside session.run. */
async function measure(runner: ModelRunner, batch: number, ctx: number, cacheBase: number): Promise<{ stepMs: number; outside: number }> {
  const start = ctx - WARMUP - MEASURE;
  let rows: StepRow[] = Array.from({ length: batch }, (_, i) => ({
    cacheId: cacheBase + i,
    requestId: `b${i}`,
    tokens: synthetic(start, i),
    position: 0,
    sampling: GREEDY,
    wants: NO_WANTS,
  }));
  const walls: number[] = [];
  let wall = 0;
  let model = 0;
  for (let s = 0; s < WARMUP + MEASURE; s++) {
    const t0 = performance.now();
    const out = await runner.step(rows);
    const dt = performance.now() - t0;
    if (s >= WARMUP) {
      walls.push(dt);
      wall += dt;
      model += out.modelMs ?? 0;
    }
    rows = rows.map((r, i) => ({ ...r, position: r.position + r.tokens.length, tokens: [out.rows[i].token] }));
  }
  rows.forEach((r) => runner.release(r.cacheId));
  return { stepMs: median(walls), outside: Math.max(0, 1 - model / wall) };
}

async function decodeLoop(runner: ModelRunner, batch: number, ctx: number, steps: number, cacheBase: number): Promise<void> {
  let rows: StepRow[] = Array.from({ length: batch }, (_, i) => ({
    cacheId: cacheBase + i,
    requestId: `p${i}`,
    tokens: synthetic(ctx - steps, i),
    position: 0,
    sampling: GREEDY,
    wants: NO_WANTS,
  }));
  for (let s = 0; s < steps; s++) {
    const out = await runner.step(rows);
    rows = rows.map((r, i) => ({ ...r, position: r.position + r.tokens.length, tokens: [out.rows[i].token] }));
  }
  rows.forEach((r) => runner.release(r.cacheId));
}

const pad = (s: string | number, n: number): string => String(s).padStart(n);

/** `--models small,large` and `--models-dir DIR` narrow the run; the CLI writes the JSON. */
export async function run(opts: { json?: string; flags?: Record<string, string> } = {}): Promise<ModelsBenchResult> {
  const dir = opts.flags?.['models-dir'] ?? BUNDLED_MODELS_DIR;
  const models = opts.flags?.models ? opts.flags.models.split(',') : MODELS;
  const rows: ModelsBenchRow[] = [];
  const ctxNote: Record<string, string> = {};
  console.log(`models bench: in-thread OnnxRunner, intraOpNumThreads=1, ${WARMUP} warm-up + ${MEASURE} timed decode steps per cell`);
  console.log(`${'model'.padEnd(8)}${pad('batch', 6)}${pad('ctx', 6)}${pad('step_ms', 10)}${pad('outside', 9)}`);
  for (const name of models) {
    const runner = await OnnxRunner.load(path.join(dir, name), { intraOpNumThreads: 1 });
    const max = runner.info.maxContext;
    const ctxs = [64, Math.min(512, max)];
    if (max < 512) ctxNote[name] = `max context ${max} < 512: measured at ${max} instead of 512`;
    if (!ctxs.includes(256) && max >= 256) ctxs.splice(1, 0, 256);
    for (const ctx of ctxs) {
      for (const batch of BATCHES) {
        const m = await measure(runner, batch, ctx, 1_000_000);
        const row = { model: name, batch, ctx, step_ms: round(m.stepMs), outside_run_fraction: round(m.outside, 4) };
        rows.push(row);
        console.log(
          `${name.padEnd(8)}${pad(batch, 6)}${pad(ctx, 6)}${pad(row.step_ms.toFixed(2), 10)}${pad((100 * row.outside_run_fraction).toFixed(1) + '%', 9)}`,
        );
      }
    }
    await runner.close();
  }

  // two models in two workers, busy together vs one after the other
  const a = models.includes('small') ? 'small' : models[0];
  const b = models.includes('large') ? 'large' : models[models.length - 1];
  const pBatch = 16;
  const pCtx = 256;
  const [wa, wb] = await Promise.all([WorkerRunner.start(path.join(dir, a)), WorkerRunner.start(path.join(dir, b))]);
  await Promise.all([decodeLoop(wa, pBatch, pCtx, 8, 1), decodeLoop(wb, pBatch, pCtx, 8, 1)]); // warm-up
  // balance the two loads (the faster model does more steps) so both stay busy the whole time
  const stepsB = 120;
  let t = performance.now();
  await decodeLoop(wa, pBatch, pCtx, stepsB, 1);
  const msA = performance.now() - t;
  t = performance.now();
  await decodeLoop(wb, pBatch, pCtx, stepsB, 1);
  const msB = performance.now() - t;
  const stepsA = Math.max(10, Math.round((stepsB * msB) / msA));
  const pSteps = stepsB;
  // The faster model's share runs as back-to-back decodes of at most stepsB steps each (context stays ≤ pCtx).
  const runA = async (base: number): Promise<void> => {
    for (let done = 0; done < stepsA; done += stepsB) await decodeLoop(wa, pBatch, pCtx, Math.min(stepsB, stepsA - done), base);
  };
  console.log(`parallel: ${a} (${stepsA} steps) and ${b} (${stepsB} steps) in two workers, batch ${pBatch}, decode to context ${pCtx}`);
  const serials: number[] = [];
  const parallels: number[] = [];
  // process CPU time / wall time while both run: how many cores the machine actually gave us
  const utils: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let t0 = performance.now();
    await runA(100);
    await decodeLoop(wb, pBatch, pCtx, stepsB, 100);
    serials.push(performance.now() - t0);
    t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all([runA(200), decodeLoop(wb, pBatch, pCtx, stepsB, 200)]);
    parallels.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    utils.push((cpu.user + cpu.system) / 1000 / parallels[round]);
    console.log(
      `parallel round ${round + 1}/${ROUNDS}: serial ${serials[round].toFixed(0)} ms, together ${parallels[round].toFixed(0)} ms (${utils[round].toFixed(2)} cores busy)`,
    );
  }
  const serial = median(serials);
  const parallel = median(parallels);
  await Promise.all([wa.close(), wb.close()]);
  const ratio = round(parallel / serial, 3);
  console.log(`parallel: median serial ${serial.toFixed(0)} ms, median together ${parallel.toFixed(0)} ms, ratio ${ratio}`);

  // what handing the KV cache back to JavaScript costs a step (ONNX Runtime's Node binding copies every output into a fresh buffer)
  const kvFetch: KvFetchCost[] = [];
  for (const name of models) {
    const k = await kvFetchCost(path.join(dir, name), { batch: KV_FETCH.batch, ctx: KV_FETCH.ctx, steps: KV_FETCH.steps, rounds: KV_FETCH.rounds });
    kvFetch.push(k);
    console.log(
      `kv fetch: ${name} batch ${k.batch} ctx ${k.ctx}: ${k.with_kv_us} µs CPU a step with the KV outputs, ${k.logits_only_us} µs with logits alone (${(100 * k.kv_fetch_share).toFixed(1)} % of the step)`,
    );
  }

  const result: ModelsBenchResult = {
    suite: 'models',
    settings: {
      models,
      models_dir: dir,
      batches: BATCHES,
      warmup_steps: WARMUP,
      timed_steps: MEASURE,
      step_ms: 'median over the timed steps',
      outside_run_fraction: '1 - (sum of modelMs) / (sum of step wall time) over the timed steps',
      parallel_rounds: ROUNDS,
      load_average_at_start: (await import('node:os')).loadavg()[0],
      intra_op_threads: 1,
      step: 'decode (1 token per row), all rows at the same context, batch KV reused between steps',
      ctx_notes: ctxNote,
      kv_fetch: `one decode step at batch ${KV_FETCH.batch}, context ${KV_FETCH.ctx}: session.run fetching logits and every present.* tensor against logits alone; process CPU µs per step, median of ${KV_FETCH.rounds} alternating blocks of ${KV_FETCH.steps} steps`,
      cpus: (await import('node:os')).cpus().length,
    },
    results: {
      rows,
      parallel_ratio: ratio,
      kv_fetch: kvFetch,
      parallel: {
        model_a: a,
        model_b: b,
        batch: pBatch,
        ctx: pCtx,
        steps: pSteps,
        steps_a: stepsA,
        serial_ms: round(serial),
        parallel_ms: round(parallel),
        rounds_serial_ms: serials.map((x) => round(x)),
        rounds_parallel_ms: parallels.map((x) => round(x)),
        cores_busy_together: round(median(utils), 2),
      },
    },
  };
  return result;
}

function round(x: number, d = 3): number {
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--json');
  const json = i >= 0 ? process.argv[i + 1] : undefined;
  run({ json })
    .then((r) => json && fs.writeFileSync(json, JSON.stringify(r, null, 1)))
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
