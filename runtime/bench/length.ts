// Suite length: throughput as max output grows, TokenRouter mode vs the standard-serving baseline.
import { progress, type BenchOptions, type BenchReport, type SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from './table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceSteps, thresholdMethod, tokenRouterVsBaseline } from './compareModes.ts';
import { runFigures, servingDefaults, servingSettings } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { PAPER_SETTING, runVirtual, sweepVirtual } from './virtualServing.ts';

/** Fractional throughput loss from the first length to the last (0.2 = lost 20%; negative = gained). */
export function drop(first: number, last: number): number {
  return 1 - last / first;
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const concurrency = f.num('concurrency', 4);

  // 1. The paper's R2R profile in virtual time, 128 → 1024 tokens (the range).
  const paperLengths = f.nums('lengths', [128, 256, 512, 1024]);
  const perClient = f.sized('requests-per-client', PAPER_SETTING.requestsPerClient, 2);
  const bundledLengths = f.nums('bundled-lengths', [64, 128, 224]);
  const skipBundled = f.str('runners') === 'none';
  const method = thresholdMethod(f.str('thresholds'));
  const repeats = f.sized('repeats', 2, 1);
  const total = paperLengths.length + (skipBundled ? 0 : bundledLengths.length * (choiceSteps(method, concurrency) + 2 * repeats));
  let done = 0;
  const paperRows: Row[] = [];
  for (const maxTokens of paperLengths) {
    const base = { concurrency, requests: concurrency * perClient, promptLength: PAPER_SETTING.promptLength, maxTokens };
    const tr = sweepVirtual(base);
    const bl = runVirtual({ ...base, mode: 'step-sync', retainState: false });
    paperRows.push({
      max_tokens: maxTokens,
      thresholds: `1/${tr.threshold}`,
      tokenrouter_tok_s: tr.run.metrics.outputThroughputTokS,
      baseline_tok_s: bl.metrics.outputThroughputTokS,
      speedup: tr.run.metrics.outputThroughputTokS / bl.metrics.outputThroughputTokS,
      tr_mean_e2e_ms: tr.run.metrics.e2eMs.mean,
      base_mean_e2e_ms: bl.metrics.e2eMs.mean,
    });
    progress(`length paper-profile ${maxTokens}`, ++done, total);
  }
  const pFirst = paperRows[0];
  const pLast = paperRows[paperRows.length - 1];
  const tokenrouterDrop = drop(pFirst.tokenrouter_tok_s as number, pLast.tokenrouter_tok_s as number);
  const baselineDrop = drop(pFirst.baseline_tok_s as number, pLast.baseline_tok_s as number);

  // 2. The bundled models over HTTP, up to their context window, every request run to max_tokens.
  const bundledRows: Row[] = [];
  let bundled: Record<string, unknown> | null = null;
  let runnerDesc: Record<string, unknown> = {};
  if (!skipBundled) {
    const set = await loadRunnerSet(f.str('runners'));
    runnerDesc = set.description;
    const requests = f.sized('requests', 48, 8);
    const calibrationRequests = f.sized('calibration-requests', 24, 4);
    try {
      for (const maxTokens of bundledLengths) {
        const cmp = await tokenRouterVsBaseline(
          set,
          { ...serving, algorithm: 'r2r', lanes: { small: 'small', large: 'large' }, concurrency, requests, warmup: concurrency * 2, maxTokens, ignoreEos: true },
          { method, slowLane: 'large', calibrationRequests, repeats, onStep: (what) => progress(`length ${set.kind} ${maxTokens} ${what}`, ++done, total) },
        );
        const tr = runFigures(cmp.tokenrouter);
        const bl = runFigures(cmp.baseline);
        bundledRows.push({
          max_tokens: maxTokens,
          thresholds: `1/${cmp.choice.mode.thresholds?.large ?? 1}`,
          tokenrouter_tok_s: tr.tok_s,
          baseline_tok_s: bl.tok_s,
          speedup: tr.tok_s / bl.tok_s,
          tr_mean_e2e_ms: tr.mean_e2e_ms,
          base_mean_e2e_ms: bl.mean_e2e_ms,
          out_tokens: tr.mean_output_tokens,
          handoffs_per_req: tr.handoffs_per_request,
        });
      }
    } finally {
      await set.close();
    }
    const b0 = bundledRows[0];
    const b1 = bundledRows[bundledRows.length - 1];
    bundled = {
      runners: set.kind,
      lengths: bundledLengths,
      tokenrouter_drop: drop(b0.tokenrouter_tok_s as number, b1.tokenrouter_tok_s as number),
      baseline_drop: drop(b0.baseline_tok_s as number, b1.baseline_tok_s as number),
      rows: bundledRows,
    };
  }

  console.log(`paper profile (virtual time), R2R p=${PAPER_SETTING.p}, concurrency ${concurrency}:`);
  printTable(paperRows);
  console.log(`throughput drop ${paperLengths[0]} → ${paperLengths[paperLengths.length - 1]}: TokenRouter ${(100 * tokenrouterDrop).toFixed(1)}%, baseline ${(100 * baselineDrop).toFixed(1)}% (target: TokenRouter ≤ 15%)`);
  if (bundled) {
    console.log(`bundled models over HTTP (${bundled.runners}), R2R, ignore_eos:`);
    printTable(bundledRows);
    console.log(`throughput drop ${bundledLengths[0]} → ${bundledLengths[bundledLengths.length - 1]}: TokenRouter ${(100 * (bundled.tokenrouter_drop as number)).toFixed(1)}%, baseline ${(100 * (bundled.baseline_drop as number)).toFixed(1)}%`);
  }
  const settings = {
    concurrency,
    algorithm: 'R2R',
    paper_profile: {
      clock: 'virtual',
      runner: 'simulated, paper R2R profile',
      routing: `Markov p=${PAPER_SETTING.p} small→large (token discarded), large back after 1 kept token`,
      step_ms: PAPER_SETTING.profile.stepMs,
      prefill_ms_per_token: PAPER_SETTING.profile.prefillMsPerToken,
      prompt_tokens: PAPER_SETTING.promptLength,
      lengths: paperLengths,
      requests: `${perClient} per client, closed loop`,
      max_wait_ms: PAPER_SETTING.maxWaitMs,
      max_batch: PAPER_SETTING.maxBatch,
      tokenrouter_mode: 'async-delayed, retainState true, large threshold swept 1..N',
      baseline_mode: 'step-sync, retainState false',
    },
    bundled: skipBundled
      ? 'skipped (--runners none)'
      : {
          ...runnerDesc,
          lengths: bundledLengths,
          repeats: `${repeats} per length (baseline and TokenRouter alternate, pooled)`,
          why_not_1024: 'the bundled models have a 256-token context; prompts take ~16 tokens, so 224 is the longest output they hold',
          eos: 'ignore_eos in every request: each runs to max_tokens; text past the answer is the model continuing',
          tokenrouter_mode: `async-delayed, retainState true, thresholds per length from ${method === 'model' ? 'the throughput model (calibrated per length)' : 'a sweep of the large lane'}`,
          baseline_mode: 'step-sync, retainState false',
          transport: 'HTTP/SSE, in-process server',
        },
    ...servingSettings(serving),
    quick: f.quick,
  };
  const report: BenchReport = { suite: 'length', settings, results: { tokenrouter_drop: tokenrouterDrop, baseline_drop: baselineDrop, paper_profile: { rows: paperRows }, bundled } };
  const charts: Record<string, string> = {
    paper_profile: lineChart({
      title: `Throughput vs max output, paper R2R profile, N=${concurrency}`,
      xLabel: 'max output tokens',
      yLabel: 'tok/s',
      logX: true,
      series: [
        { name: 'TokenRouter', points: paperRows.map((r) => [r.max_tokens as number, r.tokenrouter_tok_s as number]) },
        { name: 'baseline', points: paperRows.map((r) => [r.max_tokens as number, r.baseline_tok_s as number]) },
      ],
    }),
  };
  if (bundledRows.length) {
    charts.bundled = lineChart({
      title: `Throughput vs max output, bundled models, R2R, N=${concurrency}`,
      xLabel: 'max output tokens',
      yLabel: 'tok/s',
      logX: true,
      series: [
        { name: 'TokenRouter', points: bundledRows.map((r) => [r.max_tokens as number, r.tokenrouter_tok_s as number]) },
        { name: 'baseline', points: bundledRows.map((r) => [r.max_tokens as number, r.baseline_tok_s as number]) },
      ],
    });
  }
  return { ...report, output: { tables: { 'Paper profile (virtual time)': paperRows, 'Bundled models (HTTP)': bundledRows }, charts } };
}
