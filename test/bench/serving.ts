// Suite serving: each algorithm at concurrency 4 over HTTP, TokenRouter mode against the standard-serving baseline.
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet, type RunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, thresholdMethod, tokenRouterVsBaseline, type Comparison, type ThresholdMethod } from './compareModes.ts';
import { runFigures, type ServingDefaults, servingDefaults, servingSettings, versusColumns } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';

/** Each algorithm's lanes: lane name (what the algorithm calls the model) → bundled model. */
export const ALGORITHM_LANES: Record<string, Record<string, string>> = {
  'r-stitch': { small: 'small', large: 'large' },
  citer: { small: 'small', large: 'large' },
  r2r: { small: 'small', large: 'large' },
  'co-llm': { small: 'small', large: 'large' },
  me: { small: 'small', medium: 'medium', large: 'large' },
};

interface ServingSuiteSettings {
  algorithms: string[];
  concurrency: number;
  requests: number;
  method: ThresholdMethod;
  calibrationRequests: number;
  warmup: number;
  maxTokens: number;
  ignoreEos: boolean;
  repeats: number;
}

function readSettings(f: SuiteFlags): ServingSuiteSettings {
  const concurrency = f.num('concurrency', 4);
  return {
    algorithms: f.list('algorithms', Object.keys(ALGORITHM_LANES)),
    concurrency,
    requests: f.sized('requests', 96, 12),
    method: thresholdMethod(f.str('thresholds')),
    calibrationRequests: f.sized('calibration-requests', 48, 8),
    warmup: f.num('warmup', concurrency * 2),
    maxTokens: f.num('max-tokens', 128),
    ignoreEos: f.bool('ignore-eos', false),
    repeats: f.sized('repeats', 2, 1),
  };
}

/** One algorithm's outcome as the report, the main table and the all-metrics table state it. */
interface AlgorithmOutcome {
  report: Record<string, unknown>;
  row: Row;
  details: Row[];
}

function comparedAlgorithm(algorithm: string, lanes: Record<string, string>, cmp: Comparison): AlgorithmOutcome {
  const tr = runFigures(cmp.tokenrouter);
  const base = runFigures(cmp.baseline);
  const thresholds = Object.keys(lanes)
    .map((l) => cmp.choice.mode.thresholds?.[l] ?? 1)
    .join('/');
  return {
    report: {
      algorithm,
      tokenrouter_tok_s: tr.tok_s,
      baseline_tok_s: base.tok_s,
      speedup: tr.tok_s / base.tok_s,
      tokenrouter_mean_e2e_ms: tr.mean_e2e_ms,
      baseline_mean_e2e_ms: base.mean_e2e_ms,
      tokenrouter_p99_e2e_ms: tr.p99_e2e_ms,
      baseline_p99_e2e_ms: base.p99_e2e_ms,
      e2e_improvement: base.mean_e2e_ms / tr.mean_e2e_ms,
      thresholds: cmp.choice.mode.thresholds,
      threshold_choice: choiceJson(cmp.choice),
      tokenrouter: { ...tr, tokens_by_model: cmp.tokenrouter.run.tokensByModel },
      baseline: { ...base, tokens_by_model: cmp.baseline.run.tokensByModel },
    },
    row: {
      algorithm,
      thresholds,
      ...versusColumns(tr, base),
      tr_p99_e2e_ms: tr.p99_e2e_ms,
      base_p99_e2e_ms: base.p99_e2e_ms,
      out_tokens: tr.mean_output_tokens,
      handoffs_per_req: tr.handoffs_per_request,
    },
    details: [
      { algorithm, mode: 'tokenrouter', ...tr },
      { algorithm, mode: 'baseline', ...base },
    ],
  };
}

/** An algorithm that could not run (e.g. its router head is not exported yet) keeps its place in the tables. */
function failedAlgorithm(algorithm: string, message: string): AlgorithmOutcome {
  return {
    report: { algorithm, error: message },
    row: { algorithm, thresholds: '-', tokenrouter_tok_s: NaN, baseline_tok_s: NaN, speedup: NaN, error: message.slice(0, 80) },
    details: [],
  };
}

function describeSettings(s: ServingSuiteSettings, serving: ServingDefaults, set: RunnerSet, quick: boolean): Record<string, unknown> {
  return {
    concurrency: s.concurrency,
    requests_per_run: s.requests,
    repeats: `${s.repeats} (baseline and TokenRouter alternate; figures pool every repeat)`,
    warmup_requests: s.warmup,
    calibration_requests: s.calibrationRequests,
    max_tokens: s.maxTokens,
    eos: s.ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural (the model stops when it answers)',
    prompt: "chat of one word problem of the default task's validation split (benchPrompt(i))",
    temperature: 0,
    tokenrouter_mode: `async-delayed, retainState true, thresholds ${s.method === 'model' ? 'from the throughput model (P, C and L_i(b) calibrated by one run with thresholds 1; entry lane fixed at 1)' : 'from a sweep of the large lane (others 1)'}`,
    baseline_mode: 'step-sync, retainState false (every return re-admitted and re-prefilled)',
    max_wait_ms: 20,
    max_batch: 32,
    transport: 'HTTP/SSE, /v1/chat/completions stream, server in the bench process on 127.0.0.1 (port 0)',
    ...servingSettings(serving),
    order: 'per algorithm: threshold choice, then (baseline, TokenRouter) × repeats',
    quick,
    ...set.description,
  };
}

function servingCharts(s: ServingSuiteSettings, algs: readonly Record<string, unknown>[], runners: string): Record<string, string> {
  const values = (key: string) => algs.map((a) => (a[key] as number) ?? NaN);
  return {
    throughput: barChart({
      title: `Committed output throughput, concurrency ${s.concurrency} (${runners} models)`,
      yLabel: 'tok/s',
      categories: s.algorithms,
      series: [
        { name: 'TokenRouter', values: values('tokenrouter_tok_s') },
        { name: 'baseline', values: values('baseline_tok_s') },
      ],
    }),
    e2e: barChart({
      title: `Mean end-to-end latency, concurrency ${s.concurrency}`,
      yLabel: 'ms',
      categories: s.algorithms,
      series: [
        { name: 'TokenRouter', values: values('tokenrouter_mean_e2e_ms') },
        { name: 'baseline', values: values('baseline_mean_e2e_ms') },
      ],
    }),
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const s = readSettings(f);
  const set = await loadRunnerSet(f.str('runners'));
  const total = s.algorithms.length * (choiceSteps(s.method, s.concurrency) + 2 * s.repeats);
  let done = 0;
  const outcomes: AlgorithmOutcome[] = [];
  try {
    for (const algorithm of s.algorithms) {
      const lanes = ALGORITHM_LANES[algorithm];
      if (!lanes) throw new Error(`unknown algorithm "${algorithm}"; known: ${Object.keys(ALGORITHM_LANES).join(', ')}`);
      progress(`serving ${algorithm}`, done, total);
      let cmp: Comparison;
      try {
        cmp = await tokenRouterVsBaseline(
          set,
          { ...serving, algorithm, lanes, concurrency: s.concurrency, requests: s.requests, warmup: s.warmup, maxTokens: s.maxTokens, ignoreEos: s.ignoreEos },
          {
            method: s.method,
            slowLane: 'large',
            calibrationRequests: s.calibrationRequests,
            repeats: s.repeats,
            onStep: (what) => progress(`serving ${algorithm} ${what}`, ++done, total),
          },
        );
      } catch (e) {
        // One algorithm that cannot run must not hide the others.
        const message = e instanceof Error ? e.message : String(e);
        console.error(`\n[bench] serving ${algorithm} failed: ${message}`);
        outcomes.push(failedAlgorithm(algorithm, message));
        continue;
      }
      outcomes.push(comparedAlgorithm(algorithm, lanes, cmp));
    }
  } finally {
    await set.close();
  }
  const rows = outcomes.map((o) => o.row);
  const algs = outcomes.map((o) => o.report);
  printTable(rows);
  const report: BenchReport = { suite: 'serving', settings: describeSettings(s, serving, set, f.quick), results: { algorithms: algs } };
  return {
    ...report,
    output: { tables: { 'Throughput and latency': rows, 'All metrics': outcomes.flatMap((o) => o.details) }, charts: servingCharts(s, algs, set.kind) },
  };
}
