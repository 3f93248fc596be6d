// Suite serving: each algorithm at concurrency 4 over HTTP, TokenRouter mode against the standard-serving baseline.
import { progress, type BenchOptions, type BenchReport, type SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from './table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, thresholdMethod, tokenRouterVsBaseline, type Comparison } from './compareModes.ts';
import { runFigures, servingDefaults, servingSettings } from './servingCase.ts';
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

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const algorithms = f.list('algorithms', Object.keys(ALGORITHM_LANES));
  const concurrency = f.num('concurrency', 4);
  const requests = f.sized('requests', 96, 12);
  const method = thresholdMethod(f.str('thresholds'));
  const calibrationRequests = f.sized('calibration-requests', 48, 8);
  const warmup = f.num('warmup', concurrency * 2);
  const maxTokens = f.num('max-tokens', 128);
  const ignoreEos = f.bool('ignore-eos', false);
  const repeats = f.sized('repeats', 2, 1);
  const set = await loadRunnerSet(f.str('runners'));
  const total = algorithms.length * (choiceSteps(method, concurrency) + 2 * repeats);
  let done = 0;
  const rows: Row[] = [];
  const details: Row[] = [];
  const algs: Record<string, unknown>[] = [];
  try {
    for (const algorithm of algorithms) {
      const lanes = ALGORITHM_LANES[algorithm];
      if (!lanes) throw new Error(`unknown algorithm "${algorithm}"; known: ${Object.keys(ALGORITHM_LANES).join(', ')}`);
      progress(`serving ${algorithm}`, done, total);
      let cmp: Comparison;
      try {
        cmp = await tokenRouterVsBaseline(
          set,
          { ...serving, algorithm, lanes, concurrency, requests, warmup, maxTokens, ignoreEos },
          { method, slowLane: 'large', calibrationRequests, repeats, onStep: (what) => progress(`serving ${algorithm} ${what}`, ++done, total) },
        );
      } catch (e) {
        // One algorithm that cannot run (e.g. its router head is not exported yet) must not hide the others.
        const message = e instanceof Error ? e.message : String(e);
        console.error(`\n[bench] serving ${algorithm} failed: ${message}`);
        algs.push({ algorithm, error: message });
        rows.push({ algorithm, thresholds: '-', tokenrouter_tok_s: NaN, baseline_tok_s: NaN, speedup: NaN, error: message.slice(0, 80) });
        continue;
      }
      const tr = runFigures(cmp.tokenrouter);
      const base = runFigures(cmp.baseline);
      const thresholds = Object.keys(lanes).map((l) => cmp.choice.mode.thresholds?.[l] ?? 1).join('/');
      algs.push({
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
      });
      rows.push({
        algorithm,
        thresholds,
        tokenrouter_tok_s: tr.tok_s,
        baseline_tok_s: base.tok_s,
        speedup: tr.tok_s / base.tok_s,
        tr_mean_e2e_ms: tr.mean_e2e_ms,
        base_mean_e2e_ms: base.mean_e2e_ms,
        tr_p99_e2e_ms: tr.p99_e2e_ms,
        base_p99_e2e_ms: base.p99_e2e_ms,
        out_tokens: tr.mean_output_tokens,
        handoffs_per_req: tr.handoffs_per_request,
      });
      for (const [label, fig] of [
        ['tokenrouter', tr],
        ['baseline', base],
      ] as const) {
        details.push({ algorithm, mode: label, ...fig });
      }
    }
  } finally {
    await set.close();
  }
  printTable(rows);
  const settings = {
    concurrency,
    requests_per_run: requests,
    repeats: `${repeats} (baseline and TokenRouter alternate; figures pool every repeat)`,
    warmup_requests: warmup,
    calibration_requests: calibrationRequests,
    max_tokens: maxTokens,
    eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural (the model stops when it answers)',
    prompt: 'chat "Q: <a>*<b>=\\nA: " — the bundled multiplication task (sampleQuestion(i))',
    temperature: 0,
    tokenrouter_mode: `async-delayed, retainState true, thresholds ${method === 'model' ? 'from the throughput model (P, C and L_i(b) calibrated by one run with thresholds 1; entry lane fixed at 1)' : 'from a sweep of the large lane (others 1)'}`,
    baseline_mode: 'step-sync, retainState false (every return re-admitted and re-prefilled)',
    max_wait_ms: 20,
    max_batch: 32,
    transport: 'HTTP/SSE, /v1/chat/completions stream, server in the bench process on 127.0.0.1 (port 0)',
    ...servingSettings(serving),
    order: 'per algorithm: threshold choice, then (baseline, TokenRouter) × repeats',
    quick: f.quick,
    ...set.description,
  };
  const report: BenchReport = { suite: 'serving', settings, results: { algorithms: algs } };
  return { ...report, output: {
    tables: { 'Throughput and latency': rows, 'All metrics': details },
    charts: {
      throughput: barChart({
        title: `Committed output throughput, concurrency ${concurrency} (${set.kind} models)`,
        yLabel: 'tok/s',
        categories: algorithms,
        series: [
          { name: 'TokenRouter', values: algs.map((a) => (a.tokenrouter_tok_s as number) ?? NaN) },
          { name: 'baseline', values: algs.map((a) => (a.baseline_tok_s as number) ?? NaN) },
        ],
      }),
      e2e: barChart({
        title: `Mean end-to-end latency, concurrency ${concurrency}`,
        yLabel: 'ms',
        categories: algorithms,
        series: [
          { name: 'TokenRouter', values: algs.map((a) => (a.tokenrouter_mean_e2e_ms as number) ?? NaN) },
          { name: 'baseline', values: algs.map((a) => (a.baseline_mean_e2e_ms as number) ?? NaN) },
        ],
      }),
    },
  } };
}
