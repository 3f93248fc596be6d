// Suite dtmc-onnx: the throughput model against R2R on the bundled ONNX models, real clock, one concurrency.
//
// One cluster (small + large worker runners, async-delayed, state retained) serves a closed loop of N
// clients that resubmit forever, so there is no start-up or drain in any measured window. The large
// model's threshold walks the sweep (every round alternates the direction, so drifting background
// load hits every setting alike); each setting gets a settling period, then its committed tokens are
// counted over a fixed wall-clock window. The model's inputs come from the same server: P and C from
// every request step of the measured windows (estimateRouting), L_i(b) from their batch wall times,
// launch to results routed, split by whether the other model was running at launch (two cores are
// shared, so overlapping steps slow each other); also with one L_i(b) per batch size (DESIGN §4), and
// from the T = 1 windows alone, the calibration modelThresholds uses.
import os from 'node:os';
import path from 'node:path';
import { r2r } from '../../examples/algorithms/r2r.ts';
import { createRealClock } from '../clock/clock.ts';
import { Cluster } from '../engine/cluster.ts';
import type { RequestHandle } from '../engine/cluster.ts';
import { BUNDLED_MODELS_DIR } from '../runner/onnxAccuracy.ts';
import {
  estimateRouting,
  fitContendedLatency,
  fitLatencyProfile,
  markContended,
  solveThroughput,
  type LatencySample,
  type RoutingStep,
  type TimedBatch,
} from '../throughput/index.ts';
import { TraceRecorder } from '../trace/traceRecorder.ts';
import { benchPrompt } from '../loadgen/benchPrompt.ts';
import { progress, type BenchOptions, type BenchReport, type SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from './table.ts';
import { bundledModelsPresent, loadBundledRunners, simulatedRunners, type RunnerSet } from './benchRunners.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { mulberry32 } from '../../shared/rng.ts';

const LANES = ['small', 'large'] as const;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Linear-interpolated quantile (q in [0, 1]). */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const x = q * (s.length - 1);
  const lo = Math.floor(x);
  return lo + 1 < s.length ? s[lo] + (x - lo) * (s[lo + 1] - s[lo]) : s[lo];
}
const median = (xs: readonly number[]) => quantile(xs, 0.5);

/** Seeded Fisher–Yates, so a run's setting order is reproducible. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const rand = mulberry32(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

async function runnerSet(choice: string): Promise<RunnerSet> {
  if (choice === 'simulated') return simulatedRunners(LANES);
  if (!bundledModelsPresent(BUNDLED_MODELS_DIR, LANES)) {
    throw new Error(`bundled ONNX models not found in ${path.relative(process.cwd(), BUNDLED_MODELS_DIR)}/{small,large}/onnx/model.onnx (or pass --runners simulated for a smoke run)`);
  }
  return loadBundledRunners(BUNDLED_MODELS_DIR, LANES);
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const N = f.num('concurrency', 8);
  const thresholds = f.nums('thresholds', Array.from({ length: N }, (_, i) => i + 1)).filter((t) => t >= 1 && t <= N);
  const rounds = f.sized('rounds', 10, 1);
  const settleMs = f.sized('settle-ms', 750, 500);
  const warmupMs = f.sized('warmup-ms', 4000, 1000);
  const windowMs = f.sized('window-ms', 2000, 1500);
  const maxTokens = f.num('max-tokens', 128);
  const runnersChoice = f.str('runners', 'bundled');
  if (!thresholds.includes(1)) thresholds.unshift(1); // the calibration setting
  const total = rounds * thresholds.length;

  const set = await runnerSet(runnersChoice);
  const clock = createRealClock();
  const trace = new TraceRecorder(0);
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    retainState: true,
    // The model has no deadline; a long one keeps the runtime live without firing in steady state.
    maxWaitMs: 60_000,
    maxConcurrency: N,
    trace,
    models: LANES.map((name) => ({ name, runner: set.runners.get(name)!, maxBatch: N, threshold: 1, kvCapacityTokens: Infinity })),
  });
  const algorithm = r2r();

  // Model inputs, recorded in every measured window and tagged with its setting: every request step
  // and every batch's wall time.
  let recording: number | null = null;
  const steps: (RoutingStep & { setting: number })[] = [];
  // Every batch, counted or not: whether a counted batch overlapped the other model depends on batches
  // launched before its window opened.
  const timed: (TimedBatch & { setting: number | null })[] = [];
  const handoffs = new Map<string, { to: string; kept: boolean }>();
  trace.subscribe((e) => {
    if (e.type === 'batch') {
      timed.push({ setting: recording, model: LANES.indexOf(e.model as (typeof LANES)[number]), batch: e.requestIds.length, startMs: e.start, endMs: e.end });
    }
    if (recording === null) return;
    const setting = recording;
    if (e.type === 'handoff') handoffs.set(`${e.batchId}:${e.requestId}`, { to: e.to, kept: e.kept });
    if (e.type !== 'batch') return;
    for (const id of e.requestIds) {
      const key = `${e.batchId}:${id}`;
      const h = handoffs.get(key);
      handoffs.delete(key);
      steps.push(h ? { setting, requestId: id, model: e.model, next: h.to, committed: h.kept ? 1 : 0 } : { setting, requestId: id, model: e.model, committed: 1 });
    }
  });

  // The closed loop: N clients, each resubmitting the moment its request ends.
  let counted = 0;
  let sent = 0;
  let stopping = false;
  let failed = 0;
  const live = new Set<RequestHandle>();
  const send = () => {
    const i = sent++;
    const h = cluster.submit({
      id: `c${i}`,
      prompt: set.tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]),
      maxTokens,
      sampling: { temperature: 0, topP: 1, topK: 0, seed: i },
      algorithm,
      onToken: () => {
        counted++;
      },
      onEnd: (res) => {
        live.delete(h);
        if (res.status === 'failed') failed++;
        if (!stopping) send();
      },
    });
    live.add(h);
  };

  const measured = new Map<number, number[]>(thresholds.map((t) => [t, []]));
  const loads: number[] = [];
  const byRound: Map<number, number>[] = [];
  const wallStart = performance.now();
  let done = 0;
  try {
    for (let c = 0; c < N; c++) send();
    await sleep(warmupMs); // ONNX Runtime and JIT warm-up, at T = 1
    for (let round = 0; round < rounds; round++) {
      // A fresh random order every round: drifting background load (a shared machine) then
      // spreads over the settings instead of tracking their position in the sweep.
      const order = shuffled(thresholds, round + 1);
      byRound.push(new Map());
      for (const t of order) {
        cluster.setThresholds({ large: t });
        await sleep(settleMs);
        recording = t;
        const c0 = counted;
        const t0 = performance.now();
        await sleep(windowMs);
        const tokS = ((counted - c0) / (performance.now() - t0)) * 1000;
        recording = null;
        measured.get(t)!.push(tokS);
        byRound[round].set(t, tokS);
        loads.push(os.loadavg()[0]);
        progress(`dtmc-onnx round ${round + 1}/${rounds} T_large=${t}: ${tokS.toFixed(0)} tok/s`, ++done, total);
      }
    }
  } finally {
    stopping = true;
    const ending = [...live].map((h) => h.done);
    for (const h of [...live]) h.cancel();
    await Promise.allSettled(ending);
    await sleep(100); // batches already on a worker finish there; let them drain before shutdown
    await set.close();
  }
  const wallMs = performance.now() - wallStart;
  if (failed > 0) console.error(`[bench] dtmc-onnx: ${failed} requests failed`);

  // The model's inputs two ways: from every window pooled (the best estimate of P, C and L_i(b) over
  // the batch sizes the sweep visits), and from the T = 1 windows only (what a calibration run at
  // thresholds 1 sees, as modelThresholds does: large batches rarely form there, so L_large(b) for
  // larger b is extrapolated).
  const maxBatch = LANES.map(() => N);
  const samples: (LatencySample & { setting: number })[] = markContended(timed).flatMap((x, k) => {
    const setting = timed[k].setting;
    return setting === null ? [] : [{ ...x, setting }];
  });
  const inputsFrom = (keep: (setting: number) => boolean) => {
    const st = steps.filter((s) => keep(s.setting));
    const est = estimateRouting(st, { models: [...LANES], entryModel: 'small' });
    const sm = samples.filter((s) => keep(s.setting));
    const profile = fitLatencyProfile(sm, { maxBatch });
    const predicted = new Map(
      thresholds.map((t) => [t, solveThroughput({ N, P: est.P, C: est.C, latency: profile.table, maxBatch, thresholds: [1, t] }).tokensPerSec]),
    );
    // The same, with step latency split by whether the other model was running at launch.
    const split = fitContendedLatency(sm, { maxBatch });
    const predictedContended = new Map(
      thresholds.map((t) => [
        t,
        solveThroughput({ N, P: est.P, C: est.C, latency: split.alone.table, contendedLatency: split.contended.table, maxBatch, thresholds: [1, t] }).tokensPerSec,
      ]),
    );
    return { est, profile, split, predicted, predictedContended, samples: sm };
  };
  const pooled = inputsFrom(() => true);
  const t1 = inputsFrom((s) => s === 1);
  const { est, profile, split } = pooled;
  // Primary prediction: contention-aware (on 2 cores a model's step time depends on whether the other runs).
  const predicted = pooled.predictedContended;
  // Each setting with the step latency measured in its own windows (P, C pooled): the chain's
  // queueing dynamics alone, with the latency model's error (how L_i(b) shifts with the mix of
  // work the other model runs on the shared cores) taken out.
  const ownProfiles = new Map(thresholds.map((t) => [t, fitLatencyProfile(samples.filter((s) => s.setting === t), { maxBatch })]));
  const own = new Map(
    thresholds.map((t) => [t, solveThroughput({ N, P: est.P, C: est.C, latency: ownProfiles.get(t)!.table, maxBatch, thresholds: [1, t] }).tokensPerSec]),
  );
  // Round-normalised measurements: each window ÷ its round's geometric mean over settings ×
  // the geometric mean of all rounds, which removes load that drifts between rounds (not within).
  const gmean = (xs: readonly number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
  const roundMeans = byRound.map((m) => gmean([...m.values()]));
  const grand = gmean(roundMeans);
  const normalised = new Map(thresholds.map((t) => [t, byRound.map((m, r) => ((m.get(t) ?? NaN) / roundMeans[r]) * grand).filter(Number.isFinite)]));

  const rows: Row[] = thresholds.map((t) => {
    const xs = measured.get(t)!;
    const med = median(xs);
    const pred = predicted.get(t)!;
    return {
      thresholds: `1/${t}`,
      predicted_tok_s: pred,
      measured_median_tok_s: med,
      measured_q1: quantile(xs, 0.25),
      measured_q3: quantile(xs, 0.75),
      rel_error: (pred - med) / med,
      predicted_batch_only: pooled.predicted.get(t)!,
      rel_error_batch_only: (pooled.predicted.get(t)! - med) / med,
      predicted_t1_cal: t1.predictedContended.get(t)!,
      rel_error_t1_cal: (t1.predictedContended.get(t)! - med) / med,
      predicted_own_latency: own.get(t)!,
      rel_error_own_latency: (own.get(t)! - med) / med,
      measured_round_norm: median(normalised.get(t)!),
    };
  });
  const bestPred = rows.reduce((a, b) => ((b.predicted_tok_s as number) > (a.predicted_tok_s as number) ? b : a));
  const bestMeas = rows.reduce((a, b) => ((b.measured_median_tok_s as number) > (a.measured_median_tok_s as number) ? b : a));
  const gap = ((bestMeas.measured_median_tok_s as number) - (bestPred.measured_median_tok_s as number)) / (bestMeas.measured_median_tok_s as number);
  const maxRel = Math.max(...rows.map((r) => Math.abs(r.rel_error as number)));
  const bestBy = (key: string) => rows.reduce((a, b) => ((b[key] as number) > (a[key] as number) ? b : a));
  const gapOf = (key: string) => ((bestMeas.measured_median_tok_s as number) - (bestBy(key).measured_median_tok_s as number)) / (bestMeas.measured_median_tok_s as number);
  const maxRelOwn = Math.max(...rows.map((r) => Math.abs(r.rel_error_own_latency as number)));
  const maxRelBatchOnly = Math.max(...rows.map((r) => Math.abs(r.rel_error_batch_only as number)));
  const bestNorm = bestBy('measured_round_norm');
  const bestPredT1 = rows.reduce((a, b) => ((b.predicted_t1_cal as number) > (a.predicted_t1_cal as number) ? b : a));
  const gapT1 = ((bestMeas.measured_median_tok_s as number) - (bestPredT1.measured_median_tok_s as number)) / (bestMeas.measured_median_tok_s as number);
  const maxRelT1 = Math.max(...rows.map((r) => Math.abs(r.rel_error_t1_cal as number)));
  // Noise yardstick: the median over settings of each setting's interquartile range / median across rounds.
  const spread = median(rows.map((r) => ((r.measured_q3 as number) - (r.measured_q1 as number)) / (r.measured_median_tok_s as number)));
  const summary: Row = {
    case: `R2R bundled ONNX N=${N}`,
    predicted_best: bestPred.thresholds,
    measured_best: bestMeas.thresholds,
    best_gap: gap,
    max_rel_error: maxRel,
    iqr_over_median: spread,
    batch_only_predicted_best: bestBy('predicted_batch_only').thresholds,
    batch_only_best_gap: gapOf('predicted_batch_only'),
    batch_only_max_rel_error: maxRelBatchOnly,
    t1_cal_predicted_best: bestPredT1.thresholds,
    t1_cal_best_gap: gapT1,
    t1_cal_max_rel_error: maxRelT1,
    own_latency_predicted_best: bestBy('predicted_own_latency').thresholds,
    own_latency_best_gap: gapOf('predicted_own_latency'),
    own_latency_max_rel_error: maxRelOwn,
    round_norm_measured_best: bestNorm.thresholds,
    best_within_1pct: gap <= 0.01,
    error_within_10pct: maxRel <= 0.1,
  };

  console.log(`\nR2R on the bundled ONNX models, N=${N}, real clock (${rounds} rounds × ${windowMs / 1000} s per setting, medians)`);
  printTable(rows);
  console.log(
    `predicted best ${bestPred.thresholds}, measured best ${bestMeas.thresholds}, best_gap ${(gap * 100).toFixed(2)}%, ` +
      `max |error| ${(maxRel * 100).toFixed(1)}%, interquartile range ${(spread * 100).toFixed(1)}% of the median ` +
      `[best within 1%: ${gap <= 0.01 ? 'met' : 'MISSED'}; error within 10%: ${maxRel <= 0.1 ? 'met' : 'MISSED'}]`,
  );
  console.log(
    `latency by batch size only (DESIGN §4, no contention): predicted best ${bestBy('predicted_batch_only').thresholds}, best_gap ${(gapOf('predicted_batch_only') * 100).toFixed(2)}%, max |error| ${(maxRelBatchOnly * 100).toFixed(1)}%`,
  );
  console.log(
    `calibrated on the T = 1 windows only: predicted best ${bestPredT1.thresholds}, best_gap ${(gapT1 * 100).toFixed(2)}%, max |error| ${(maxRelT1 * 100).toFixed(1)}%`,
  );
  console.log(
    `with each setting's own step latency: predicted best ${bestBy('predicted_own_latency').thresholds}, best_gap ${(gapOf('predicted_own_latency') * 100).toFixed(2)}%, max |error| ${(maxRelOwn * 100).toFixed(1)}%; ` +
      `round-normalised measured best ${bestNorm.thresholds}`,
  );
  console.log(`P = ${JSON.stringify(est.P.map((r) => r.map((x) => +x.toFixed(4))))}, C = ${JSON.stringify(est.C.map((r) => r.map((x) => +x.toFixed(3))))}`);
  const fmt = (xs: readonly number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(`L(b) ms pooled: small ${fmt(profile.table[0])} | large ${fmt(profile.table[1])}`);
  console.log(`L(b) ms alone: small ${fmt(split.alone.table[0])} | large ${fmt(split.alone.table[1])}`);
  console.log(`L(b) ms contended: small ${fmt(split.contended.table[0])} | large ${fmt(split.contended.table[1])}`);

  const latencyRows: Row[] = Array.from({ length: N }, (_, k) => ({
    batch: k + 1,
    small_ms: profile.table[0][k],
    small_samples: samples.filter((s) => s.model === 0 && s.batch === k + 1).length,
    small_alone_ms: split.alone.table[0][k],
    small_contended_ms: split.contended.table[0][k],
    small_contended_samples: samples.filter((s) => s.model === 0 && s.batch === k + 1 && s.contended).length,
    large_ms: profile.table[1][k],
    large_samples: samples.filter((s) => s.model === 1 && s.batch === k + 1).length,
    large_alone_ms: split.alone.table[1][k],
    large_contended_ms: split.contended.table[1][k],
    large_contended_samples: samples.filter((s) => s.model === 1 && s.batch === k + 1 && s.contended).length,
    large_ms_t1_cal: t1.profile.table[1][k],
    large_samples_t1: t1.samples.filter((s) => s.model === 1 && s.batch === k + 1).length,
  }));
  const report: BenchReport = {
    suite: 'dtmc-onnx',
    settings: {
      algorithm: 'R2R (bundled r2r router head, τ = 0.088), small → large discards, large hands back after one kept token',
      runners: set.description,
      concurrency: N,
      thresholds_large: thresholds,
      threshold_small: 1,
      rounds: `${rounds} (each round visits every setting once, in a fresh seeded random order)`,
      settle_ms: settleMs,
      window_ms: windowMs,
      statistic: 'median over rounds of committed tok/s in each window; measured_round_norm: each window ÷ its round’s geometric mean × the grand geometric mean, then the median',
      clock: 'real (performance.now)',
      workload: `closed loop: ${N} clients resubmit at once; prompts are the bundled task's questions, greedy, natural EOS, max_tokens ${maxTokens}`,
      cluster: 'one in-process cluster for the whole sweep (no HTTP), async-delayed, retainState true, maxBatch N, maxWait 60 s',
      warmup_ms: warmupMs,
      model_inputs: 'P, C from every request step recorded in the measured windows (finishes folded back to small, estimateRouting); L_i(b) = batch wall time launch → results routed, split by whether the other model was running at launch (markContended, fitContendedLatency; the chain picks the table at each launch). Primary: all windows pooled, contention-aware; batch_only: one L_i(b) per batch size (DESIGN §4); t1_cal: the T = 1 windows only (contention-aware)',
      wall_s: wallMs / 1000,
      quick: f.quick,
    },
    results: {
      summary,
      table: rows,
      load_avg_1m_per_window: { min: Math.min(...loads), median: median(loads), max: Math.max(...loads) },
      samples_per_setting: Object.fromEntries([...measured].map(([t, xs]) => [`1/${t}`, xs])),
      model_inputs: {
        pooled: {
          P: est.P,
          C: est.C,
          counts: est.counts,
          steps: est.steps,
          latency_ms: { small: profile.table[0], large: profile.table[1] },
          alone_latency_ms: { small: split.alone.table[0], large: split.alone.table[1] },
          contended_latency_ms: { small: split.contended.table[0], large: split.contended.table[1] },
          batch_samples: samples.length,
          contended_batch_samples: samples.filter((x) => x.contended).length,
        },
        own_latency_ms: Object.fromEntries([...ownProfiles].map(([t, p]) => [`1/${t}`, { small: p.table[0], large: p.table[1] }])),
        t1_calibration: { P: t1.est.P, C: t1.est.C, counts: t1.est.counts, latency_ms: { small: t1.profile.table[0], large: t1.profile.table[1] }, batch_samples: t1.samples.length },
      },
    },
  };
  const chart = lineChart({
    title: `R2R, bundled ONNX models, N=${N}: model vs measured (real clock)`,
    yLabel: 'committed tok/s',
    xLabel: 'large-model threshold',
    series: [
      { name: 'predicted (DTMC, contention-aware)', points: thresholds.map((t) => [t, predicted.get(t)!] as [number, number]) },
      { name: 'predicted, latency by batch only', points: thresholds.map((t) => [t, pooled.predicted.get(t)!] as [number, number]) },
      { name: 'predicted, T = 1 calibration', points: thresholds.map((t) => [t, t1.predicted.get(t)!] as [number, number]) },
      { name: "predicted, each setting's own latency", points: thresholds.map((t) => [t, own.get(t)!] as [number, number]) },
      { name: 'measured (median)', points: thresholds.map((t) => [t, median(measured.get(t)!)] as [number, number]) },
    ],
  });
  return { ...report, output: { tables: { Summary: [summary], 'Predicted vs measured': rows, 'Fitted step latency (all windows; t1 columns: T = 1 windows only)': latencyRows }, charts: { predicted_vs_measured: chart } } };
}
