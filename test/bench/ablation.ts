// Suite ablation: R2R at concurrency 8, baseline → + state retention → + async → + delayed batching, each step's gain.
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceJson, choiceSteps, chooseTokenRouterMode, thresholdMethod } from './compareModes.ts';
import { poolResults, runServingCase, servingDefaults, servingSettings, type ServingMode, type ServingResult } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';
import { PAPER_SETTING, runVirtual, sweepVirtual } from './virtualServing.ts';

/** The paper's four steps. (A fifth, lookahead, went with lookahead itself: routing now runs beside the model.) */
export const LADDER: readonly { step: string; mode: ServingMode | 'delayed' }[] = [
  { step: 'baseline (step-sync, re-admission)', mode: { label: 'baseline', mode: 'step-sync', retainState: false } },
  { step: '+ state retention', mode: { label: 'retain', mode: 'step-sync', retainState: true } },
  { step: '+ async', mode: { label: 'async', mode: 'async-immediate', retainState: true } },
  { step: '+ delayed batching', mode: 'delayed' },
];

/** Adds each step's ratio to the one before and to the baseline. */
export function withRatios(rows: { step: string; tok_s: number }[]): Row[] {
  return rows.map((r, i) => ({ ...r, vs_previous: i === 0 ? 1 : r.tok_s / rows[i - 1].tok_s, vs_baseline: r.tok_s / rows[0].tok_s }));
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const concurrency = f.num('concurrency', 8);
  const skipBundled = f.str('runners') === 'none';
  const repeats = f.sized('repeats', 2, 1);
  const method = thresholdMethod(f.str('thresholds'));
  const total = 1 + (skipBundled ? 0 : choiceSteps(method, concurrency) + LADDER.length * repeats);
  let done = 0;

  // Paper profile in virtual time: the same ladder, 512-token outputs.
  const vbase = {
    concurrency,
    requests: concurrency * PAPER_SETTING.requestsPerClient,
    promptLength: PAPER_SETTING.promptLength,
    maxTokens: f.num('paper-max-tokens', 512),
  };
  const paperRaw = LADDER.map(({ step, mode }) => {
    if (mode === 'delayed') {
      const s = sweepVirtual(vbase);
      return { step, tok_s: s.run.metrics.outputThroughputTokS, mean_e2e_ms: s.run.metrics.e2eMs.mean, thresholds: `1/${s.threshold}` };
    }
    const r = runVirtual({ ...vbase, mode: mode.mode, retainState: mode.retainState });
    return { step, tok_s: r.metrics.outputThroughputTokS, mean_e2e_ms: r.metrics.e2eMs.mean, thresholds: '1/1' };
  });
  progress('ablation paper-profile', ++done, total);
  const paperLadder = withRatios(paperRaw);

  let ladder: Row[] = [];
  let kind = '';
  let runnerDesc: Record<string, unknown> = {};
  let sweep: unknown = null;
  const maxTokens = f.num('max-tokens', 128);
  const ignoreEos = f.bool('ignore-eos', false);
  // A steady-state window: at 128 requests after 16 the ladder read 2.41-2.45x, at 512 after 512 2.88-3.31x on the same
  // builds; the short window measured the start (catch-up prefills on large, V8 still compiling), which users do not run in.
  const requests = f.sized('requests', 512, 16);
  const warmup = f.sized('warmup', 64 * concurrency, 2 * concurrency);
  if (!skipBundled) {
    const set = await loadRunnerSet(f.str('runners'));
    runnerDesc = set.description;
    kind = set.kind;
    const c = { ...serving, algorithm: 'r2r', lanes: { small: 'small', large: 'large' }, concurrency, requests, warmup, maxTokens, ignoreEos };
    try {
      const s = await chooseTokenRouterMode(set, c, {
        method,
        slowLane: 'large',
        calibrationRequests: f.sized('calibration-requests', 64, 8),
        onStep: (what) => progress(`ablation ${set.kind} ${what}`, ++done, total),
      });
      sweep = choiceJson(s);
      // Repeats walk the whole ladder again, every other walk backwards (ABBA), so a drift over the run (background
      // load, the process warming up) hits every step alike instead of favouring the first steps of each walk.
      const modeOf = (mode: (typeof LADDER)[number]['mode']): ServingMode => (mode === 'delayed' ? { ...s.mode, label: 'delayed' } : mode);
      const results: ServingResult[][] = LADDER.map(() => []);
      for (let k = 0; k < repeats; k++) {
        const walk = [...LADDER.entries()];
        if (k % 2 === 1) walk.reverse();
        for (const [i, { step, mode }] of walk) {
          results[i].push(await runServingCase(set, { ...c, mode: modeOf(mode) }));
          progress(`ablation ${set.kind} ${step}`, ++done, total);
        }
      }
      const raw = LADDER.map(({ step, mode }, i) => {
        const m = modeOf(mode);
        const r = poolResults(results[i]);
        const met = r.run.metrics;
        return {
          step,
          tok_s: met.outputThroughputTokS,
          mean_e2e_ms: met.e2eMs.mean,
          p99_e2e_ms: met.e2eMs.p99,
          thresholds: `1/${m.thresholds?.large ?? 1}`,
          handoffs_per_req: r.run.handoffs / Math.max(1, met.completed),
        };
      });
      ladder = withRatios(raw);
    } finally {
      await set.close();
    }
  }
  const fmt = (rows: Row[]) => rows.map((r) => ({ ...r }));
  console.log(`paper profile (virtual time), R2R p=${PAPER_SETTING.p}, N=${concurrency}:`);
  printTable(fmt(paperLadder));
  if (ladder.length) {
    console.log(`${kind} models over HTTP, R2R, N=${concurrency}:`);
    printTable(fmt(ladder));
    const last = ladder[ladder.length - 1].vs_baseline as number;
    const allHelp = ladder.slice(1).every((r) => (r.vs_previous as number) > 1);
    console.log(`full ladder ×${last.toFixed(2)} the baseline (target ≥ 2.5×); every step helps: ${allHelp ? 'yes' : 'no'}`);
  }
  const settings = {
    algorithm: 'R2R',
    concurrency,
    steps: LADDER.map((l) =>
      l.mode === 'delayed'
        ? `${l.step}: async-delayed, retainState true, thresholds from ${method === 'model' ? 'the throughput model' : 'a sweep'}`
        : `${l.step}: ${l.mode.mode}, retainState ${l.mode.retainState}`,
    ),
    bundled: skipBundled
      ? 'skipped (--runners none)'
      : {
          ...runnerDesc,
          requests_per_step: requests,
          warmup_requests_per_step: warmup,
          repeats: `${repeats} (the ladder is walked ${repeats}×, every other walk backwards; figures pool every walk)`,
          max_tokens: maxTokens,
          eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural',
          transport: 'HTTP/SSE, in-process server',
          max_wait_ms: 20,
          max_batch: 32,
        },
    paper_profile: {
      clock: 'virtual',
      step_ms: PAPER_SETTING.profile.stepMs,
      routing: `Markov p=${PAPER_SETTING.p}`,
      prompt_tokens: PAPER_SETTING.promptLength,
      max_tokens: vbase.maxTokens,
      requests: vbase.requests,
      max_wait_ms: PAPER_SETTING.maxWaitMs,
    },
    not_reproduced:
      "the paper's CUDA-graph step has no CPU counterpart; its ladder starts from the official R2R implementation instead of our standard-serving baseline",
    ...servingSettings(serving),
    quick: f.quick,
  };
  const primary = ladder.length ? ladder : paperLadder;
  const report: BenchReport = {
    suite: 'ablation',
    settings,
    results: { ladder: primary, ladder_source: ladder.length ? kind : 'paper_profile', threshold_choice: sweep, paper_profile: { ladder: paperLadder } },
  };
  const chart = (title: string, rows: Row[]) =>
    barChart({
      title,
      yLabel: 'tok/s',
      categories: rows.map((r) => String(r.step).replace(/ \(.*\)/, '')),
      series: [{ name: 'committed tok/s', values: rows.map((r) => r.tok_s as number) }],
    });
  const charts: Record<string, string> = { paper_profile: chart(`Ablation ladder, paper R2R profile, N=${concurrency} (virtual time)`, paperLadder) };
  if (ladder.length) charts.bundled = chart(`Ablation ladder, ${kind} models over HTTP, R2R, N=${concurrency}`, ladder);
  return { ...report, output: { tables: { 'Bundled models (HTTP)': ladder, 'Paper profile (virtual time)': paperLadder }, charts } };
}
