// Suite length: throughput as max output grows, TokenRouter mode vs the standard-serving baseline.
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceSteps, thresholdMethod, tokenRouterVsBaseline, type ThresholdMethod } from './compareModes.ts';
import { runFigures, type ServingDefaults, servingDefaults, servingSettings, versusColumns } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { PAPER_SETTING, runVirtual, sweepVirtual } from './virtualServing.ts';

/** Fractional throughput loss from the first length to the last (0.2 = lost 20%; negative = gained). */
export function drop(first: number, last: number): number {
  return 1 - last / first;
}

interface LengthSettings {
  concurrency: number;
  /** Paper profile: output lengths and closed-loop requests per client. */
  paperLengths: number[];
  perClient: number;
  /** Bundled models: output lengths (their context holds at most 224), skipped with --runners none. */
  bundledLengths: number[];
  skipBundled: boolean;
  runners: string | undefined;
  method: ThresholdMethod;
  repeats: number;
  requests: number;
  calibrationRequests: number;
}

function readSettings(f: SuiteFlags): LengthSettings {
  return {
    concurrency: f.num('concurrency', 4),
    paperLengths: f.nums('lengths', [128, 256, 512, 1024]),
    perClient: f.sized('requests-per-client', PAPER_SETTING.requestsPerClient, 2),
    bundledLengths: f.nums('bundled-lengths', [64, 128, 224]),
    skipBundled: f.str('runners') === 'none',
    runners: f.str('runners'),
    method: thresholdMethod(f.str('thresholds')),
    repeats: f.sized('repeats', 2, 1),
    requests: f.sized('requests', 48, 8),
    calibrationRequests: f.sized('calibration-requests', 24, 4),
  };
}

type Tick = (label: string) => void;

/** Throughput loss over the rows (first length to last), for each mode. */
function drops(rows: readonly Row[]): { tokenrouter_drop: number; baseline_drop: number } {
  const first = rows[0];
  const last = rows[rows.length - 1];
  return {
    tokenrouter_drop: drop(first.tokenrouter_tok_s as number, last.tokenrouter_tok_s as number),
    baseline_drop: drop(first.baseline_tok_s as number, last.baseline_tok_s as number),
  };
}

/** 1. The paper's R2R profile in virtual time, 128 → 1024 tokens (the range). */
function paperProfile(s: LengthSettings, tick: Tick): Row[] {
  return s.paperLengths.map((maxTokens) => {
    const base = { concurrency: s.concurrency, requests: s.concurrency * s.perClient, promptLength: PAPER_SETTING.promptLength, maxTokens };
    const tr = sweepVirtual(base);
    const bl = runVirtual({ ...base, mode: 'step-sync', retainState: false });
    tick(`length paper-profile ${maxTokens}`);
    return {
      max_tokens: maxTokens,
      thresholds: `1/${tr.threshold}`,
      tokenrouter_tok_s: tr.run.metrics.outputThroughputTokS,
      baseline_tok_s: bl.metrics.outputThroughputTokS,
      speedup: tr.run.metrics.outputThroughputTokS / bl.metrics.outputThroughputTokS,
      tr_mean_e2e_ms: tr.run.metrics.e2eMs.mean,
      base_mean_e2e_ms: bl.metrics.e2eMs.mean,
    };
  });
}

/** 2. The bundled models over HTTP, up to their context window, every request run to max_tokens. */
async function bundledModels(
  s: LengthSettings,
  serving: ServingDefaults,
  tick: Tick,
): Promise<{ rows: Row[]; kind: string; description: Record<string, unknown> }> {
  const set = await loadRunnerSet(s.runners);
  const rows: Row[] = [];
  try {
    for (const maxTokens of s.bundledLengths) {
      const cmp = await tokenRouterVsBaseline(
        set,
        {
          ...serving,
          algorithm: 'r2r',
          lanes: { small: 'small', large: 'large' },
          concurrency: s.concurrency,
          requests: s.requests,
          warmup: s.concurrency * 2,
          maxTokens,
          ignoreEos: true,
        },
        {
          method: s.method,
          slowLane: 'large',
          calibrationRequests: s.calibrationRequests,
          repeats: s.repeats,
          onStep: (what) => tick(`length ${set.kind} ${maxTokens} ${what}`),
        },
      );
      const tr = runFigures(cmp.tokenrouter);
      const bl = runFigures(cmp.baseline);
      rows.push({
        max_tokens: maxTokens,
        thresholds: `1/${cmp.choice.mode.thresholds?.large ?? 1}`,
        ...versusColumns(tr, bl),
        out_tokens: tr.mean_output_tokens,
        handoffs_per_req: tr.handoffs_per_request,
      });
    }
  } finally {
    await set.close();
  }
  return { rows, kind: set.kind, description: set.description };
}

function describeSettings(s: LengthSettings, serving: ServingDefaults, runnerDesc: Record<string, unknown>, quick: boolean): Record<string, unknown> {
  return {
    concurrency: s.concurrency,
    algorithm: 'R2R',
    paper_profile: {
      clock: 'virtual',
      runner: 'simulated, paper R2R profile',
      routing: `Markov p=${PAPER_SETTING.p} small→large (token discarded), large back after 1 kept token`,
      step_ms: PAPER_SETTING.profile.stepMs,
      prefill_ms_per_token: PAPER_SETTING.profile.prefillMsPerToken,
      prompt_tokens: PAPER_SETTING.promptLength,
      lengths: s.paperLengths,
      requests: `${s.perClient} per client, closed loop`,
      max_wait_ms: PAPER_SETTING.maxWaitMs,
      max_batch: PAPER_SETTING.maxBatch,
      tokenrouter_mode: 'async-delayed, retainState true, large threshold swept 1..N',
      baseline_mode: 'step-sync, retainState false',
    },
    bundled: s.skipBundled
      ? 'skipped (--runners none)'
      : {
          ...runnerDesc,
          lengths: s.bundledLengths,
          repeats: `${s.repeats} per length (baseline and TokenRouter alternate, pooled)`,
          why_not_1024: 'the bundled models have a 256-token context; prompts take ~16 tokens, so 224 is the longest output they hold',
          eos: 'ignore_eos in every request: each runs to max_tokens; text past the answer is the model continuing',
          tokenrouter_mode: `async-delayed, retainState true, thresholds per length from ${s.method === 'model' ? 'the throughput model (calibrated per length)' : 'a sweep of the large lane'}`,
          baseline_mode: 'step-sync, retainState false',
          transport: 'HTTP/SSE, in-process server',
        },
    ...servingSettings(serving),
    quick,
  };
}

function throughputChart(title: string, rows: readonly Row[]): string {
  return lineChart({
    title,
    xLabel: 'max output tokens',
    yLabel: 'tok/s',
    logX: true,
    series: [
      { name: 'TokenRouter', points: rows.map((r) => [r.max_tokens as number, r.tokenrouter_tok_s as number]) },
      { name: 'baseline', points: rows.map((r) => [r.max_tokens as number, r.baseline_tok_s as number]) },
    ],
  });
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const s = readSettings(f);
  const { concurrency, paperLengths, bundledLengths } = s;
  const total = paperLengths.length + (s.skipBundled ? 0 : bundledLengths.length * (choiceSteps(s.method, concurrency) + 2 * s.repeats));
  let done = 0;
  const tick: Tick = (label) => progress(label, ++done, total);

  const paperRows = paperProfile(s, tick);
  const paperDrops = drops(paperRows);
  const measured = s.skipBundled ? null : await bundledModels(s, serving, tick);
  const bundledRows = measured?.rows ?? [];
  const bundled = measured && { runners: measured.kind, lengths: bundledLengths, ...drops(bundledRows), rows: bundledRows };

  const pct = (x: number) => (100 * x).toFixed(1);
  console.log(`paper profile (virtual time), R2R p=${PAPER_SETTING.p}, concurrency ${concurrency}:`);
  printTable(paperRows);
  console.log(
    `throughput drop ${paperLengths[0]} → ${paperLengths[paperLengths.length - 1]}: TokenRouter ${pct(paperDrops.tokenrouter_drop)}%, baseline ${pct(paperDrops.baseline_drop)}% (target: TokenRouter ≤ 15%)`,
  );
  if (bundled) {
    console.log(`bundled models over HTTP (${bundled.runners}), R2R, ignore_eos:`);
    printTable(bundledRows);
    console.log(
      `throughput drop ${bundledLengths[0]} → ${bundledLengths[bundledLengths.length - 1]}: TokenRouter ${pct(bundled.tokenrouter_drop)}%, baseline ${pct(bundled.baseline_drop)}%`,
    );
  }
  const settings = describeSettings(s, serving, measured?.description ?? {}, f.quick);
  const report: BenchReport = { suite: 'length', settings, results: { ...paperDrops, paper_profile: { rows: paperRows }, bundled } };
  const charts: Record<string, string> = { paper_profile: throughputChart(`Throughput vs max output, paper R2R profile, N=${concurrency}`, paperRows) };
  if (bundledRows.length) charts.bundled = throughputChart(`Throughput vs max output, bundled models, R2R, N=${concurrency}`, bundledRows);
  return { ...report, output: { tables: { 'Paper profile (virtual time)': paperRows, 'Bundled models (HTTP)': bundledRows }, charts } };
}
