// Suite combos: one algorithm on each pair of bundled models, TokenRouter mode vs the standard-serving baseline.
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, thresholdMethod, tokenRouterVsBaseline } from './compareModes.ts';
import { runFigures, servingDefaults, servingSettings, versusColumns } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';

export const PAIRS: readonly [string, string][] = [
  ['small', 'medium'],
  ['small', 'large'],
  ['medium', 'large'],
];

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  // R-Stitch reads only the entropy, which every model has; the router heads exist only on small (labelled by large).
  const algorithm = f.str('algorithm', 'r-stitch');
  const concurrency = f.num('concurrency', 4);
  const requests = f.sized('requests', 96, 12);
  const method = thresholdMethod(f.str('thresholds'));
  const calibrationRequests = f.sized('calibration-requests', 48, 8);
  const maxTokens = f.num('max-tokens', 128);
  const ignoreEos = f.bool('ignore-eos', false);
  const repeats = f.sized('repeats', 2, 1);
  const set = await loadRunnerSet(f.str('runners'));
  const total = PAIRS.length * (choiceSteps(method, concurrency) + 2 * repeats);
  let done = 0;
  const rows: Row[] = [];
  const combos: Record<string, unknown>[] = [];
  try {
    for (const [a, b] of PAIRS) {
      const name = `${a}+${b}`;
      // The algorithm's lanes are called small and large; here they run whichever pair is measured.
      const cmp = await tokenRouterVsBaseline(
        set,
        { ...serving, algorithm, lanes: { small: a, large: b }, concurrency, requests, warmup: concurrency * 2, maxTokens, ignoreEos },
        { method, slowLane: 'large', calibrationRequests, repeats, onStep: (what) => progress(`combos ${name} ${what}`, ++done, total) },
      );
      const tr = runFigures(cmp.tokenrouter);
      const bl = runFigures(cmp.baseline);
      const share = (t: Record<string, number>) => {
        const all = Object.values(t).reduce((x, y) => x + y, 0);
        return all > 0 ? (t.large ?? 0) / all : 0;
      };
      combos.push({
        combo: name,
        tokenrouter_tok_s: tr.tok_s,
        baseline_tok_s: bl.tok_s,
        speedup: tr.tok_s / bl.tok_s,
        thresholds: cmp.choice.mode.thresholds,
        threshold_choice: choiceJson(cmp.choice),
        tokenrouter: tr,
        baseline: bl,
        second_model_token_share: share(cmp.tokenrouter.run.tokensByModel),
      });
      rows.push({
        combo: name,
        thresholds: `1/${cmp.choice.mode.thresholds?.large ?? 1}`,
        ...versusColumns(tr, bl),
        second_model_token_share: share(cmp.tokenrouter.run.tokensByModel),
        handoffs_per_req: tr.handoffs_per_request,
        out_tokens: tr.mean_output_tokens,
      });
    }
  } finally {
    await set.close();
  }
  const table = rows;
  printTable(table);
  const settings = {
    algorithm,
    concurrency,
    requests_per_run: requests,
    repeats: `${repeats} (baseline and TokenRouter alternate; figures pool every repeat)`,
    calibration_requests: calibrationRequests,
    max_tokens: maxTokens,
    eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural',
    lanes: 'the algorithm’s "small" lane runs the first model of the pair, its "large" lane the second',
    tokenrouter_mode: `async-delayed, retainState true, thresholds from ${method === 'model' ? 'the throughput model (calibrated per pair)' : 'a sweep of the second model'}`,
    baseline_mode: 'step-sync, retainState false',
    transport: 'HTTP/SSE, in-process server',
    ...set.description,
    ...servingSettings(serving),
    quick: f.quick,
  };
  const report: BenchReport = { suite: 'combos', settings, results: { combos } };
  return {
    ...report,
    output: {
      tables: { 'Model combinations': table },
      charts: {
        throughput: barChart({
          title: `${algorithm} on each model pair, concurrency ${concurrency} (${set.kind} models)`,
          yLabel: 'tok/s',
          categories: table.map((r) => String(r.combo)),
          series: [
            { name: 'TokenRouter', values: table.map((r) => r.tokenrouter_tok_s as number) },
            { name: 'baseline', values: table.map((r) => r.baseline_tok_s as number) },
          ],
        }),
      },
    },
  };
}
