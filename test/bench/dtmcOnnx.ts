// Suite dtmc-onnx: the throughput model against R2R on the bundled ONNX models, real clock, one concurrency.
//
// One cluster (small + large worker runners, async-delayed, state retained) serves a closed loop of N
// clients while the large model's threshold walks the sweep (measureThresholdSweep). The model's
// inputs come from the same server: P and C from every request step of the measured windows
// (estimateRouting), L_i(b) from their batch wall times, launch to results routed, split by whether
// the other model was running at launch (two cores are shared, so overlapping steps slow each other);
// also with one L_i(b) per batch size (the paper's model), and from the T = 1 windows alone, the calibration
// modelThresholds uses.
import {
  estimateRouting,
  fitContendedLatency,
  fitLatencyProfile,
  markContended,
  solveThroughput,
  type LatencySample,
} from '../../runtime/control/throughput/index.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { LANES, measureThresholdSweep, type Measurement, type SweepSettings } from './measureThresholdSweep.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';

/** Linear-interpolated quantile (q in [0, 1]). */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const x = q * (s.length - 1);
  const lo = Math.floor(x);
  return lo + 1 < s.length ? s[lo] + (x - lo) * (s[lo + 1] - s[lo]) : s[lo];
}
const median = (xs: readonly number[]) => quantile(xs, 0.5);

function readSettings(f: SuiteFlags): SweepSettings {
  const N = f.num('concurrency', 8);
  const thresholds = f
    .nums(
      'thresholds',
      Array.from({ length: N }, (_, i) => i + 1),
    )
    .filter((t) => t >= 1 && t <= N);
  if (!thresholds.includes(1)) thresholds.unshift(1);
  return {
    N,
    thresholds,
    rounds: f.sized('rounds', 10, 1),
    settleMs: f.sized('settle-ms', 750, 500),
    warmupMs: f.sized('warmup-ms', 4000, 1000),
    windowMs: f.sized('window-ms', 2000, 1500),
    maxTokens: f.num('max-tokens', 128),
    runners: f.str('runners', 'bundled'),
  };
}

type Sample = LatencySample & { setting: number };

/** P, C and L_i(b) from the windows `keep` selects, and the throughput the chain predicts from them at every setting. */
function modelInputs(s: SweepSettings, m: Measurement, samples: readonly Sample[], keep: (setting: number) => boolean) {
  const { N, thresholds } = s;
  const maxBatch = LANES.map(() => N);
  const est = estimateRouting(
    m.steps.filter((x) => keep(x.setting)),
    { models: [...LANES], entryModel: 'small' },
  );
  const sm = samples.filter((x) => keep(x.setting));
  const profile = fitLatencyProfile(sm, { maxBatch });
  const predicted = new Map(
    thresholds.map((t) => [t, solveThroughput({ N, P: est.P, C: est.C, latency: profile.table, maxBatch, thresholds: [1, t] }).tokensPerSec]),
  );
  // The same, with step latency split by whether the other model was running at launch.
  const split = fitContendedLatency(sm, { maxBatch });
  const predictedContended = new Map(
    thresholds.map((t) => [
      t,
      solveThroughput({ N, P: est.P, C: est.C, latency: split.alone.table, contendedLatency: split.contended.table, maxBatch, thresholds: [1, t] })
        .tokensPerSec,
    ]),
  );
  return { est, profile, split, predicted, predictedContended, samples: sm };
}

/**
 * The model's inputs two ways: from every window pooled (the best estimate of P, C and L_i(b) over
 * the batch sizes the sweep visits), and from the T = 1 windows only (what a calibration run at
 * thresholds 1 sees, as modelThresholds does: large batches rarely form there, so L_large(b) for
 * larger b is extrapolated).
 */
function fitModels(s: SweepSettings, m: Measurement) {
  const { N, thresholds } = s;
  const maxBatch = LANES.map(() => N);
  const samples: Sample[] = markContended(m.timed).flatMap((x, k) => {
    const setting = m.timed[k].setting;
    return setting === null ? [] : [{ ...x, setting }];
  });
  const pooled = modelInputs(s, m, samples, () => true);
  const t1 = modelInputs(s, m, samples, (x) => x === 1);
  // Each setting with the step latency measured in its own windows (P, C pooled): the chain's
  // queueing dynamics alone, with the latency model's error (how L_i(b) shifts with the mix of
  // work the other model runs on the shared cores) taken out.
  const ownProfiles = new Map(
    thresholds.map((t) => [
      t,
      fitLatencyProfile(
        samples.filter((x) => x.setting === t),
        { maxBatch },
      ),
    ]),
  );
  const { P, C } = pooled.est;
  const own = new Map(thresholds.map((t) => [t, solveThroughput({ N, P, C, latency: ownProfiles.get(t)!.table, maxBatch, thresholds: [1, t] }).tokensPerSec]));
  return { samples, pooled, t1, ownProfiles, own };
}

type Fits = ReturnType<typeof fitModels>;

/**
 * Round-normalised measurements: each window ÷ its round's geometric mean over settings × the
 * geometric mean of all rounds, which removes load that drifts between rounds (not within).
 */
function roundNormalised(thresholds: readonly number[], byRound: readonly Map<number, number>[]): Map<number, number[]> {
  const gmean = (xs: readonly number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
  const roundMeans = byRound.map((m) => gmean([...m.values()]));
  const grand = gmean(roundMeans);
  return new Map(thresholds.map((t) => [t, byRound.map((m, r) => ((m.get(t) ?? NaN) / roundMeans[r]) * grand).filter(Number.isFinite)]));
}

/** One threshold setting: measured quantiles, and each prediction with its relative error. */
type SettingRow = {
  thresholds: string;
  predicted_tok_s: number;
  measured_median_tok_s: number;
  measured_q1: number;
  measured_q3: number;
  rel_error: number;
  predicted_batch_only: number;
  rel_error_batch_only: number;
  predicted_t1_cal: number;
  rel_error_t1_cal: number;
  predicted_own_latency: number;
  rel_error_own_latency: number;
  measured_round_norm: number;
};

function settingRows(s: SweepSettings, m: Measurement, fits: Fits): SettingRow[] {
  const normalised = roundNormalised(s.thresholds, m.byRound);
  // Primary prediction: contention-aware (on 2 cores a model's step time depends on whether the other runs).
  const predicted = fits.pooled.predictedContended;
  return s.thresholds.map((t) => {
    const xs = m.measured.get(t)!;
    const med = median(xs);
    const pred = predicted.get(t)!;
    const batchOnly = fits.pooled.predicted.get(t)!;
    const t1Cal = fits.t1.predictedContended.get(t)!;
    const own = fits.own.get(t)!;
    return {
      thresholds: `1/${t}`,
      predicted_tok_s: pred,
      measured_median_tok_s: med,
      measured_q1: quantile(xs, 0.25),
      measured_q3: quantile(xs, 0.75),
      rel_error: (pred - med) / med,
      predicted_batch_only: batchOnly,
      rel_error_batch_only: (batchOnly - med) / med,
      predicted_t1_cal: t1Cal,
      rel_error_t1_cal: (t1Cal - med) / med,
      predicted_own_latency: own,
      rel_error_own_latency: (own - med) / med,
      measured_round_norm: median(normalised.get(t)!),
    };
  });
}

/** For each prediction: the setting it calls best, how far that setting's measurement falls short of the measured best, and its worst error. */
function summarise(N: number, rows: readonly SettingRow[]) {
  type Key = Exclude<keyof SettingRow, 'thresholds'>;
  const bestBy = (key: Key) => rows.reduce((a, b) => (b[key] > a[key] ? b : a));
  const bestMeas = bestBy('measured_median_tok_s');
  const gapOf = (key: Key) => (bestMeas.measured_median_tok_s - bestBy(key).measured_median_tok_s) / bestMeas.measured_median_tok_s;
  const maxAbs = (key: Key) => Math.max(...rows.map((r) => Math.abs(r[key])));
  const gap = gapOf('predicted_tok_s');
  const maxRel = maxAbs('rel_error');
  return {
    case: `R2R bundled ONNX N=${N}`,
    predicted_best: bestBy('predicted_tok_s').thresholds,
    measured_best: bestMeas.thresholds,
    best_gap: gap,
    max_rel_error: maxRel,
    // Noise yardstick: the median over settings of each setting's interquartile range / median across rounds.
    iqr_over_median: median(rows.map((r) => (r.measured_q3 - r.measured_q1) / r.measured_median_tok_s)),
    batch_only_predicted_best: bestBy('predicted_batch_only').thresholds,
    batch_only_best_gap: gapOf('predicted_batch_only'),
    batch_only_max_rel_error: maxAbs('rel_error_batch_only'),
    t1_cal_predicted_best: bestBy('predicted_t1_cal').thresholds,
    t1_cal_best_gap: gapOf('predicted_t1_cal'),
    t1_cal_max_rel_error: maxAbs('rel_error_t1_cal'),
    own_latency_predicted_best: bestBy('predicted_own_latency').thresholds,
    own_latency_best_gap: gapOf('predicted_own_latency'),
    own_latency_max_rel_error: maxAbs('rel_error_own_latency'),
    round_norm_measured_best: bestBy('measured_round_norm').thresholds,
    best_within_1pct: gap <= 0.01,
    error_within_10pct: maxRel <= 0.1,
  };
}

type Summary = ReturnType<typeof summarise>;

function printReport(s: SweepSettings, rows: readonly SettingRow[], sum: Summary, fits: Fits): void {
  const pct = (x: number, digits: number) => (x * 100).toFixed(digits);
  console.log(`\nR2R on the bundled ONNX models, N=${s.N}, real clock (${s.rounds} rounds × ${s.windowMs / 1000} s per setting, medians)`);
  printTable(rows);
  console.log(
    `predicted best ${sum.predicted_best}, measured best ${sum.measured_best}, best_gap ${pct(sum.best_gap, 2)}%, ` +
      `max |error| ${pct(sum.max_rel_error, 1)}%, interquartile range ${pct(sum.iqr_over_median, 1)}% of the median ` +
      `[best within 1%: ${sum.best_within_1pct ? 'met' : 'MISSED'}; error within 10%: ${sum.error_within_10pct ? 'met' : 'MISSED'}]`,
  );
  console.log(
    `latency by batch size only (no contention): predicted best ${sum.batch_only_predicted_best}, best_gap ${pct(sum.batch_only_best_gap, 2)}%, max |error| ${pct(sum.batch_only_max_rel_error, 1)}%`,
  );
  console.log(
    `calibrated on the T = 1 windows only: predicted best ${sum.t1_cal_predicted_best}, best_gap ${pct(sum.t1_cal_best_gap, 2)}%, max |error| ${pct(sum.t1_cal_max_rel_error, 1)}%`,
  );
  console.log(
    `with each setting's own step latency: predicted best ${sum.own_latency_predicted_best}, best_gap ${pct(sum.own_latency_best_gap, 2)}%, max |error| ${pct(sum.own_latency_max_rel_error, 1)}%; ` +
      `round-normalised measured best ${sum.round_norm_measured_best}`,
  );
  const { est, profile, split } = fits.pooled;
  console.log(`P = ${JSON.stringify(est.P.map((r) => r.map((x) => +x.toFixed(4))))}, C = ${JSON.stringify(est.C.map((r) => r.map((x) => +x.toFixed(3))))}`);
  const fmt = (xs: readonly number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(`L(b) ms pooled: small ${fmt(profile.table[0])} | large ${fmt(profile.table[1])}`);
  console.log(`L(b) ms alone: small ${fmt(split.alone.table[0])} | large ${fmt(split.alone.table[1])}`);
  console.log(`L(b) ms contended: small ${fmt(split.contended.table[0])} | large ${fmt(split.contended.table[1])}`);
}

/** Fitted step latency per batch size, with the sample counts behind each figure. */
function latencyRows(N: number, fits: Fits): Row[] {
  const { samples, t1 } = fits;
  const { profile, split } = fits.pooled;
  const count = (xs: readonly Sample[], model: number, batch: number, contendedOnly = false) =>
    xs.filter((x) => x.model === model && x.batch === batch && (!contendedOnly || x.contended)).length;
  return Array.from({ length: N }, (_, k) => ({
    batch: k + 1,
    small_ms: profile.table[0][k],
    small_samples: count(samples, 0, k + 1),
    small_alone_ms: split.alone.table[0][k],
    small_contended_ms: split.contended.table[0][k],
    small_contended_samples: count(samples, 0, k + 1, true),
    large_ms: profile.table[1][k],
    large_samples: count(samples, 1, k + 1),
    large_alone_ms: split.alone.table[1][k],
    large_contended_ms: split.contended.table[1][k],
    large_contended_samples: count(samples, 1, k + 1, true),
    large_ms_t1_cal: t1.profile.table[1][k],
    large_samples_t1: count(t1.samples, 1, k + 1),
  }));
}

function describeSettings(s: SweepSettings, m: Measurement, quick: boolean): Record<string, unknown> {
  const { N } = s;
  return {
    algorithm: 'R2R (bundled r2r router head, τ = 0.088), small → large discards, large hands back after one kept token',
    runners: m.runners,
    concurrency: N,
    thresholds_large: s.thresholds,
    threshold_small: 1,
    rounds: `${s.rounds} (each round visits every setting once, in a fresh seeded random order)`,
    settle_ms: s.settleMs,
    window_ms: s.windowMs,
    statistic:
      'median over rounds of committed tok/s in each window; measured_round_norm: each window ÷ its round’s geometric mean × the grand geometric mean, then the median',
    clock: 'real (performance.now)',
    workload: `closed loop: ${N} clients resubmit at once; prompts are the bundled task's questions, greedy, natural EOS, max_tokens ${s.maxTokens}`,
    cluster: 'one in-process cluster for the whole sweep (no HTTP), async-delayed, retainState true, maxBatch N, maxWait 60 s',
    warmup_ms: s.warmupMs,
    model_inputs:
      'P, C from every request step recorded in the measured windows (finishes folded back to small, estimateRouting); L_i(b) = batch wall time launch → results routed, split by whether the other model was running at launch (markContended, fitContendedLatency; the chain picks the table at each launch). Primary: all windows pooled, contention-aware; batch_only: one L_i(b) per batch size; t1_cal: the T = 1 windows only (contention-aware)',
    wall_s: m.wallMs / 1000,
    quick,
  };
}

function modelInputsReport(fits: Fits): Record<string, unknown> {
  const { samples, t1, ownProfiles } = fits;
  const { est, profile, split } = fits.pooled;
  return {
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
    t1_calibration: {
      P: t1.est.P,
      C: t1.est.C,
      counts: t1.est.counts,
      latency_ms: { small: t1.profile.table[0], large: t1.profile.table[1] },
      batch_samples: t1.samples.length,
    },
  };
}

function predictionChart(s: SweepSettings, m: Measurement, fits: Fits): string {
  const line = (name: string, y: (t: number) => number) => ({ name, points: s.thresholds.map((t) => [t, y(t)] as [number, number]) });
  return lineChart({
    title: `R2R, bundled ONNX models, N=${s.N}: model vs measured (real clock)`,
    yLabel: 'committed tok/s',
    xLabel: 'large-model threshold',
    series: [
      line('predicted (DTMC, contention-aware)', (t) => fits.pooled.predictedContended.get(t)!),
      line('predicted, latency by batch only', (t) => fits.pooled.predicted.get(t)!),
      line('predicted, T = 1 calibration', (t) => fits.t1.predicted.get(t)!),
      line("predicted, each setting's own latency", (t) => fits.own.get(t)!),
      line('measured (median)', (t) => median(m.measured.get(t)!)),
    ],
  });
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const s = readSettings(f);
  const m = await measureThresholdSweep(s);
  const fits = fitModels(s, m);
  const rows = settingRows(s, m, fits);
  const summary = summarise(s.N, rows);
  printReport(s, rows, summary, fits);
  const loads = m.loads;
  const report: BenchReport = {
    suite: 'dtmc-onnx',
    settings: describeSettings(s, m, f.quick),
    results: {
      summary,
      table: rows,
      load_avg_1m_per_window: { min: Math.min(...loads), median: median(loads), max: Math.max(...loads) },
      samples_per_setting: Object.fromEntries([...m.measured].map(([t, xs]) => [`1/${t}`, xs])),
      model_inputs: modelInputsReport(fits),
    },
  };
  const tables = {
    Summary: [summary],
    'Predicted vs measured': rows,
    'Fitted step latency (all windows; t1 columns: T = 1 windows only)': latencyRows(s.N, fits),
  };
  return { ...report, output: { tables, charts: { predicted_vs_measured: predictionChart(s, m, fits) } } };
}
