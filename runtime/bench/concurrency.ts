// Suite concurrency: 1 → 16 concurrent requests, total throughput growth and the per-request speed each keeps.
import type { ServingMetrics } from '../loadgen/requestMetrics.ts';
import { progress, type BenchOptions, type BenchReport, type SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from './table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, chooseTokenRouterMode, thresholdMethod } from './compareModes.ts';
import { BASELINE, poolResults, runServingCase, servingDefaults, servingSettings, type ServingResult } from './servingCase.ts';
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

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const levels = f.nums('levels', [1, 2, 4, 8, 16]);
  const lo = levels[0];
  const hi = levels[levels.length - 1];
  const skipBundled = f.str('runners') === 'none';
  const repeats = f.sized('repeats', 2, 1);
  const method = thresholdMethod(f.str('thresholds'));
  const sweepTotal = levels.reduce((s, n) => s + choiceSteps(method, n) + repeats, 0);
  const total = levels.length + (skipBundled ? 0 : sweepTotal);
  let done = 0;

  // 1. Paper profile, virtual time.
  const maxTokensPaper = f.num('paper-max-tokens', 512);
  const perClient = f.sized('requests-per-client', PAPER_SETTING.requestsPerClient, 2);
  const paperRows: Row[] = [];
  const paperTr = new Map<number, ServingMetrics>();
  const paperBase = new Map<number, ServingMetrics>();
  for (const n of levels) {
    const base = { concurrency: n, requests: n * perClient, promptLength: PAPER_SETTING.promptLength, maxTokens: maxTokensPaper };
    const tr = sweepVirtual(base);
    const bl = runVirtual({ ...base, mode: 'step-sync', retainState: false });
    paperTr.set(n, tr.run.metrics);
    paperBase.set(n, bl.metrics);
    paperRows.push(row(n, 'tokenrouter', `1/${tr.threshold}`, tr.run.metrics), row(n, 'baseline', '1/1', bl.metrics));
    progress(`concurrency paper-profile N=${n}`, ++done, total);
  }
  const paper = {
    ...scaling(paperTr.get(lo)!, paperTr.get(hi)!),
    baseline: scaling(paperBase.get(lo)!, paperBase.get(hi)!),
    // The paper's cross-concurrency figure: TokenRouter at the top level vs the baseline alone.
    tokenrouter_at_max_vs_baseline_at_1: {
      throughput: paperTr.get(hi)!.outputThroughputTokS / paperBase.get(lo)!.outputThroughputTokS,
      single_user_speed: paperBase.get(lo)!.tpotMs.mean / paperTr.get(hi)!.tpotMs.mean,
    },
  };

  // 2. Bundled models over HTTP (R2R, natural EOS).
  let bundled: Record<string, unknown> | null = null;
  const bundledRows: Row[] = [];
  let runnerDesc: Record<string, unknown> = {};
  const maxTokens = f.num('max-tokens', 128);
  const ignoreEos = f.bool('ignore-eos', false);
  if (!skipBundled) {
    const set = await loadRunnerSet(f.str('runners'));
    runnerDesc = set.description;
    const tr = new Map<number, ServingMetrics>();
    const bl = new Map<number, ServingMetrics>();
    const choices: Record<number, unknown> = {};
    try {
      for (const n of levels) {
        const requests = Math.max(8, n * f.sized('bundled-requests-per-client', 12, 2));
        const c = { ...serving, algorithm: 'r2r', lanes: { small: 'small', large: 'large' }, concurrency: n, requests, warmup: n * 2, maxTokens, ignoreEos };
        const label = `concurrency ${set.kind} N=${n}`;
        const s = await chooseTokenRouterMode(set, c, { method, slowLane: 'large', calibrationRequests: Math.max(8, n * f.sized('calibration-requests-per-client', 6, 1)), onStep: (what) => progress(`${label} ${what}`, ++done, total) });
        choices[n] = choiceJson(s);
        const bs: ServingResult[] = [];
        const ts: ServingResult[] = [];
        for (let k = 0; k < repeats; k++) {
          bs.push(await runServingCase(set, { ...c, mode: BASELINE }));
          ts.push(await runServingCase(set, { ...c, mode: s.mode }));
          progress(`${label}`, ++done, total);
        }
        const b = poolResults(bs);
        const t = poolResults(ts);
        tr.set(n, t.run.metrics);
        bl.set(n, b.run.metrics);
        bundledRows.push(row(n, 'tokenrouter', `1/${s.mode.thresholds?.large ?? 1}`, t.run.metrics), row(n, 'baseline', '1/1', b.run.metrics));
      }
    } finally {
      await set.close();
    }
    bundled = {
      runners: set.kind,
      ...scaling(tr.get(lo)!, tr.get(hi)!),
      baseline: scaling(bl.get(lo)!, bl.get(hi)!),
      tokenrouter_at_max_vs_baseline_at_1: {
        throughput: tr.get(hi)!.outputThroughputTokS / bl.get(lo)!.outputThroughputTokS,
        single_user_speed: bl.get(lo)!.tpotMs.mean / tr.get(hi)!.tpotMs.mean,
      },
      rows: bundledRows,
      threshold_choices: choices,
    };
  }

  console.log(`paper profile (virtual time), R2R p=${PAPER_SETTING.p}, ${maxTokensPaper} output tokens:`);
  printTable(paperRows);
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  console.log(`N=${lo} → ${hi}: TokenRouter throughput ×${paper.throughput_growth.toFixed(2)}, keeps ${pct(paper.single_user_retention)} of single-user speed (target ≥ 8.61× and ≥ 51.7%); baseline ×${paper.baseline.throughput_growth.toFixed(2)}, ${pct(paper.baseline.single_user_retention)}`);
  if (bundled) {
    console.log(`bundled models over HTTP (${bundled.runners}), R2R:`);
    printTable(bundledRows);
    const b = bundled as unknown as ScalingFigures & { baseline: ScalingFigures };
    console.log(`N=${lo} → ${hi}: TokenRouter throughput ×${b.throughput_growth.toFixed(2)}, keeps ${pct(b.single_user_retention)}; baseline ×${b.baseline.throughput_growth.toFixed(2)}, ${pct(b.baseline.single_user_retention)}`);
  }
  const settings = {
    levels,
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
      max_tokens: maxTokensPaper,
      requests: `${perClient} per client, closed loop`,
      tokenrouter_mode: 'async-delayed, retainState true, large threshold swept 1..N',
      baseline_mode: 'step-sync, retainState false',
    },
    bundled: skipBundled
      ? 'skipped (--runners none)'
      : { ...runnerDesc, repeats: `${repeats} per level (baseline and TokenRouter alternate, pooled)`, max_tokens: maxTokens, eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural', tokenrouter_mode: `async-delayed, retainState true, thresholds per N from ${method === 'model' ? 'the throughput model (calibrated per N)' : 'a sweep of the large lane'}`, baseline_mode: 'step-sync, retainState false', transport: 'HTTP/SSE, in-process server' },
    ...servingSettings(serving),
    quick: f.quick,
  };
  const report: BenchReport = { suite: 'concurrency', settings, results: { paper_profile: paper, bundled, paper_rows: paperRows } };
  const series = (rows: Row[], mode: string, key: string) => rows.filter((r) => r.mode === mode).map((r) => [r.concurrency as number, r[key] as number] as [number, number]);
  const charts: Record<string, string> = {
    paper_throughput: lineChart({ title: 'Throughput vs concurrency, paper R2R profile (virtual time)', xLabel: 'concurrency', yLabel: 'tok/s', logX: true, series: [{ name: 'TokenRouter', points: series(paperRows, 'tokenrouter', 'tok_s') }, { name: 'baseline', points: series(paperRows, 'baseline', 'tok_s') }] }),
    paper_per_request: lineChart({ title: 'Per-request decode speed vs concurrency, paper profile', xLabel: 'concurrency', yLabel: 'tok/s per request', logX: true, series: [{ name: 'TokenRouter', points: series(paperRows, 'tokenrouter', 'per_request_tok_s') }, { name: 'baseline', points: series(paperRows, 'baseline', 'per_request_tok_s') }] }),
  };
  if (bundledRows.length) {
    charts.bundled_throughput = lineChart({ title: 'Throughput vs concurrency, bundled models, R2R', xLabel: 'concurrency', yLabel: 'tok/s', logX: true, series: [{ name: 'TokenRouter', points: series(bundledRows, 'tokenrouter', 'tok_s') }, { name: 'baseline', points: series(bundledRows, 'baseline', 'tok_s') }] });
    charts.bundled_per_request = lineChart({ title: 'Per-request decode speed vs concurrency, bundled models', xLabel: 'concurrency', yLabel: 'tok/s per request', logX: true, series: [{ name: 'TokenRouter', points: series(bundledRows, 'tokenrouter', 'per_request_tok_s') }, { name: 'baseline', points: series(bundledRows, 'baseline', 'per_request_tok_s') }] });
  }
  return { ...report, output: { tables: { 'Paper profile (virtual time)': paperRows, 'Bundled models (HTTP)': bundledRows }, charts } };
}
