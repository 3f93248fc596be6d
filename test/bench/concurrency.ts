// Suite concurrency: 1 → 16 concurrent requests, total throughput growth and the per-request speed each keeps.
import type { ServingMetrics } from '../../runtime/loadgen/requestMetrics.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, chooseTokenRouterMode, thresholdMethod, type ThresholdMethod } from './compareModes.ts';
import { BASELINE, poolResults, runServingCase, servingDefaults, servingSettings, type ServingDefaults, type ServingResult } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { PAPER_SETTING, runVirtual, sweepVirtual } from './virtualServing.ts';

export interface ScalingFigures {
  /** Total committed throughput at the highest concurrency / at the lowest. */
  throughput_growth: number;
  /**
   * Per-request decode speed (1 / mean TPOT) at the highest concurrency as a share of the speed a
   * single user gets alone: how much of the single-user experience each request keeps.
   */
  single_user_retention: number;
}

export function scaling(lo: ServingMetrics, hi: ServingMetrics): ScalingFigures {
  return { throughput_growth: hi.outputThroughputTokS / lo.outputThroughputTokS, single_user_retention: lo.tpotMs.mean / hi.tpotMs.mean };
}

function row(n: number, label: string, thresholds: string, m: ServingMetrics): Row {
  return {
    concurrency: n,
    mode: label,
    thresholds,
    tok_s: m.outputThroughputTokS,
    per_request_tok_s: 1000 / m.tpotMs.mean,
    mean_tpot_ms: m.tpotMs.mean,
    mean_ttft_ms: m.ttftMs.mean,
    mean_e2e_ms: m.e2eMs.mean,
    p99_e2e_ms: m.e2eMs.p99,
  };
}

interface ConcurrencySettings {
  levels: number[];
  repeats: number;
  method: ThresholdMethod;
  /** Paper profile: output tokens and closed-loop requests per client. */
  maxTokensPaper: number;
  perClient: number;
  /** Bundled models, skipped with --runners none. */
  skipBundled: boolean;
  runners: string | undefined;
  maxTokens: number;
  ignoreEos: boolean;
  bundledRequestsPerClient: number;
  calibrationRequestsPerClient: number;
}

function readSettings(f: SuiteFlags): ConcurrencySettings {
  return {
    levels: f.nums('levels', [1, 2, 4, 8, 16]),
    repeats: f.sized('repeats', 2, 1),
    method: thresholdMethod(f.str('thresholds')),
    maxTokensPaper: f.num('paper-max-tokens', 512),
    perClient: f.sized('requests-per-client', PAPER_SETTING.requestsPerClient, 2),
    skipBundled: f.str('runners') === 'none',
    runners: f.str('runners'),
    maxTokens: f.num('max-tokens', 128),
    ignoreEos: f.bool('ignore-eos', false),
    bundledRequestsPerClient: f.sized('bundled-requests-per-client', 12, 2),
    calibrationRequestsPerClient: f.sized('calibration-requests-per-client', 6, 1),
  };
}

type Tick = (label: string) => void;

/** Both modes' metrics by concurrency level, and the table rows they make. */
interface LevelSweep {
  tr: Map<number, ServingMetrics>;
  bl: Map<number, ServingMetrics>;
  rows: Row[];
}

/** Growth from the lowest level to the highest for both modes, and TokenRouter at the top against the baseline alone. */
function sweepFigures(s: ConcurrencySettings, { tr, bl }: LevelSweep) {
  const lo = s.levels[0];
  const hi = s.levels[s.levels.length - 1];
  return {
    ...scaling(tr.get(lo)!, tr.get(hi)!),
    baseline: scaling(bl.get(lo)!, bl.get(hi)!),
    // The paper's cross-concurrency figure: TokenRouter at the top level vs the baseline alone.
    tokenrouter_at_max_vs_baseline_at_1: {
      throughput: tr.get(hi)!.outputThroughputTokS / bl.get(lo)!.outputThroughputTokS,
      single_user_speed: bl.get(lo)!.tpotMs.mean / tr.get(hi)!.tpotMs.mean,
    },
  };
}

/** 1. Paper profile, virtual time. */
function paperProfile(s: ConcurrencySettings, tick: Tick): LevelSweep {
  const sweep: LevelSweep = { tr: new Map(), bl: new Map(), rows: [] };
  for (const n of s.levels) {
    const base = { concurrency: n, requests: n * s.perClient, promptLength: PAPER_SETTING.promptLength, maxTokens: s.maxTokensPaper };
    const tr = sweepVirtual(base);
    const bl = runVirtual({ ...base, mode: 'step-sync', retainState: false });
    sweep.tr.set(n, tr.run.metrics);
    sweep.bl.set(n, bl.metrics);
    sweep.rows.push(row(n, 'tokenrouter', `1/${tr.threshold}`, tr.run.metrics), row(n, 'baseline', '1/1', bl.metrics));
    tick(`concurrency paper-profile N=${n}`);
  }
  return sweep;
}

/** 2. Bundled models over HTTP (R2R, natural EOS): per level, a threshold choice, then (baseline, TokenRouter) × repeats. */
async function bundledModels(s: ConcurrencySettings, serving: ServingDefaults, tick: Tick) {
  const set = await loadRunnerSet(s.runners);
  const sweep: LevelSweep = { tr: new Map(), bl: new Map(), rows: [] };
  const choices: Record<number, unknown> = {};
  try {
    for (const n of s.levels) {
      const requests = Math.max(8, n * s.bundledRequestsPerClient);
      const c = {
        ...serving,
        algorithm: 'r2r',
        lanes: { small: 'small', large: 'large' },
        concurrency: n,
        requests,
        warmup: n * 2,
        maxTokens: s.maxTokens,
        ignoreEos: s.ignoreEos,
      };
      const label = `concurrency ${set.kind} N=${n}`;
      const choice = await chooseTokenRouterMode(set, c, {
        method: s.method,
        slowLane: 'large',
        calibrationRequests: Math.max(8, n * s.calibrationRequestsPerClient),
        onStep: (what) => tick(`${label} ${what}`),
      });
      choices[n] = choiceJson(choice);
      const bs: ServingResult[] = [];
      const ts: ServingResult[] = [];
      for (let k = 0; k < s.repeats; k++) {
        bs.push(await runServingCase(set, { ...c, mode: BASELINE }));
        ts.push(await runServingCase(set, { ...c, mode: choice.mode }));
        tick(label);
      }
      const b = poolResults(bs);
      const t = poolResults(ts);
      sweep.tr.set(n, t.run.metrics);
      sweep.bl.set(n, b.run.metrics);
      sweep.rows.push(row(n, 'tokenrouter', `1/${choice.mode.thresholds?.large ?? 1}`, t.run.metrics), row(n, 'baseline', '1/1', b.run.metrics));
    }
  } finally {
    await set.close();
  }
  return { kind: set.kind, description: set.description, sweep, choices };
}

function describeSettings(s: ConcurrencySettings, serving: ServingDefaults, runnerDesc: Record<string, unknown>, quick: boolean): Record<string, unknown> {
  const lo = s.levels[0];
  const hi = s.levels[s.levels.length - 1];
  return {
    levels: s.levels,
    algorithm: 'R2R',
    metric_definitions: {
      throughput_growth: `committed output tok/s at N=${hi} / at N=${lo}, TokenRouter mode`,
      single_user_retention: `per-request decode speed (1 / mean TPOT) at N=${hi} / at N=${lo}, TokenRouter mode`,
    },
    paper_profile: {
      clock: 'virtual',
      routing: `Markov p=${PAPER_SETTING.p}, large back after 1 kept token`,
      step_ms: PAPER_SETTING.profile.stepMs,
      step_latency: 'constant in batch size (the paper profile)',
      prefill_ms_per_token: PAPER_SETTING.profile.prefillMsPerToken,
      prompt_tokens: PAPER_SETTING.promptLength,
      max_tokens: s.maxTokensPaper,
      requests: `${s.perClient} per client, closed loop`,
      tokenrouter_mode: 'async-delayed, retainState true, large threshold swept 1..N',
      baseline_mode: 'step-sync, retainState false',
    },
    bundled: s.skipBundled
      ? 'skipped (--runners none)'
      : {
          ...runnerDesc,
          repeats: `${s.repeats} per level (baseline and TokenRouter alternate, pooled)`,
          max_tokens: s.maxTokens,
          eos: s.ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural',
          tokenrouter_mode: `async-delayed, retainState true, thresholds per N from ${s.method === 'model' ? 'the throughput model (calibrated per N)' : 'a sweep of the large lane'}`,
          baseline_mode: 'step-sync, retainState false',
          transport: 'HTTP/SSE, in-process server',
        },
    ...servingSettings(serving),
    quick,
  };
}

/** Throughput and per-request speed against concurrency, both modes; `stem` prefixes the chart names. */
function scalingCharts(stem: string, titles: { throughput: string; perRequest: string }, rows: readonly Row[]): Record<string, string> {
  const series = (mode: string, key: string) => rows.filter((r) => r.mode === mode).map((r) => [r.concurrency as number, r[key] as number] as [number, number]);
  const both = (key: string) => [
    { name: 'TokenRouter', points: series('tokenrouter', key) },
    { name: 'baseline', points: series('baseline', key) },
  ];
  return {
    [`${stem}_throughput`]: lineChart({ title: titles.throughput, xLabel: 'concurrency', yLabel: 'tok/s', logX: true, series: both('tok_s') }),
    [`${stem}_per_request`]: lineChart({
      title: titles.perRequest,
      xLabel: 'concurrency',
      yLabel: 'tok/s per request',
      logX: true,
      series: both('per_request_tok_s'),
    }),
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const s = readSettings(f);
  const { levels } = s;
  const lo = levels[0];
  const hi = levels[levels.length - 1];
  const sweepTotal = levels.reduce((sum, n) => sum + choiceSteps(s.method, n) + s.repeats, 0);
  const total = levels.length + (s.skipBundled ? 0 : sweepTotal);
  let done = 0;
  const tick: Tick = (label) => progress(label, ++done, total);

  const paperSweep = paperProfile(s, tick);
  const paper = sweepFigures(s, paperSweep);
  const measured = s.skipBundled ? null : await bundledModels(s, serving, tick);
  const bundledRows = measured?.sweep.rows ?? [];
  const bundled = measured && { runners: measured.kind, ...sweepFigures(s, measured.sweep), rows: bundledRows, threshold_choices: measured.choices };

  console.log(`paper profile (virtual time), R2R p=${PAPER_SETTING.p}, ${s.maxTokensPaper} output tokens:`);
  printTable(paperSweep.rows);
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  console.log(
    `N=${lo} → ${hi}: TokenRouter throughput ×${paper.throughput_growth.toFixed(2)}, keeps ${pct(paper.single_user_retention)} of single-user speed (target ≥ 8.61× and ≥ 51.7%); baseline ×${paper.baseline.throughput_growth.toFixed(2)}, ${pct(paper.baseline.single_user_retention)}`,
  );
  if (bundled) {
    console.log(`bundled models over HTTP (${bundled.runners}), R2R:`);
    printTable(bundledRows);
    console.log(
      `N=${lo} → ${hi}: TokenRouter throughput ×${bundled.throughput_growth.toFixed(2)}, keeps ${pct(bundled.single_user_retention)}; baseline ×${bundled.baseline.throughput_growth.toFixed(2)}, ${pct(bundled.baseline.single_user_retention)}`,
    );
  }
  const settings = describeSettings(s, serving, measured?.description ?? {}, f.quick);
  const report: BenchReport = { suite: 'concurrency', settings, results: { paper_profile: paper, bundled, paper_rows: paperSweep.rows } };
  const charts = scalingCharts(
    'paper',
    { throughput: 'Throughput vs concurrency, paper R2R profile (virtual time)', perRequest: 'Per-request decode speed vs concurrency, paper profile' },
    paperSweep.rows,
  );
  if (bundledRows.length)
    Object.assign(
      charts,
      scalingCharts(
        'bundled',
        { throughput: 'Throughput vs concurrency, bundled models, R2R', perRequest: 'Per-request decode speed vs concurrency, bundled models' },
        bundledRows,
      ),
    );
  return { ...report, output: { tables: { 'Paper profile (virtual time)': paperSweep.rows, 'Bundled models (HTTP)': bundledRows }, charts } };
}
