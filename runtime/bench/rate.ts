// Suite rate: open-loop request-rate sweep on the paper R2R profile in virtual time - goodput and p99 TPOT
// for TokenRouter (the SLO-aware optimiser's choice), the throughput-only choice and standard serving,
// each choice checked against an exhaustive measured sweep of thresholds x max-wait deadlines.
import { arrivalTimesMs } from '../loadgen/arrivals.ts';
import type { ServingMetrics } from '../loadgen/requestMetrics.ts';
import { PAPER_R2R_PROFILE } from '../sim/paperProfile.ts';
import { chooseForSlo, feasibleThresholds, optimiseForSlo, optimiseThresholds, predictLatency, type LatencySlo } from '../throughput/index.ts';
import { mulberry32 } from '../../shared/rng.ts';
import { progress, type BenchOptions, type SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { printTable, type Row } from './table.ts';
import { bundledRates, type BundledRateSettings } from './rateBundled.ts';
import { servingDefaults } from './servingCase.ts';
import { runVirtual, type VirtualCase } from './virtualServing.ts';

const PROFILE = 'paper-virtual';

interface Settings {
  p: number;
  concurrency: number;
  requests: number;
  maxTokens: number;
  promptLength: number;
  rates: number[];
  slo: LatencySlo;
  waits: number[];
  /** The deadline a throughput-only deployment keeps (the paper setting's). */
  defaultWaitMs: number;
  seed: number;
  skipPaper: boolean;
  /** null: --runners none. */
  bundled: BundledRateSettings | null;
}

function readSettings(opts: BenchOptions): Settings {
  const f = new SuiteFlags(opts.flags);
  return {
    p: f.num('p', 0.35),
    concurrency: f.sized('concurrency', 8, 4),
    requests: f.sized('requests', 600, 80),
    maxTokens: f.sized('max-tokens', 64, 32),
    promptLength: 128,
    rates: f.nums('rates', f.quick ? [1, 2, 3, 4, 6, 8] : [0.5, 1, 2, 3, 4, 5, 6, 8]),
    slo: { tpotMs: f.num('slo-tpot-ms', 30) },
    waits: f.nums('max-wait-choices', f.quick ? [5, 100] : [2, 5, 10, 20, 50, 100]),
    defaultWaitMs: 100,
    seed: f.num('seed', 1),
    skipPaper: f.bool('skip-paper', false),
    bundled:
      f.str('runners') === 'none'
        ? null
        : {
            runners: f.str('runners'),
            rates: f.nums('bundled-rates', f.quick ? [2, 8] : [2, 4, 8, 12, 16, 24]),
            slo: { tpotMs: f.num('bundled-slo-tpot-ms', 20), ttftMs: f.num('bundled-slo-ttft-ms', 2000) },
            concurrency: f.sized('concurrency', 8, 4),
            requests: f.sized('bundled-requests', 48, 16),
            maxTokens: f.sized('bundled-max-tokens', 64, 32),
          },
  };
}

interface Measured {
  thresholds: number[];
  maxWaitMs: number;
  goodputReqS: number;
  p99TpotMs: number;
  p99TtftMs: number;
  metrics: ServingMetrics;
}

const key = (t: readonly number[], w: number) => `${t.join('/')}@${w}ms`;

/** The latency model's view of the paper profile (step latency, prefill/extend charge per token). */
function modelInput(s: Settings) {
  const prof = PAPER_R2R_PROFILE;
  return {
    N: s.concurrency,
    P: [[1 - s.p, s.p], [1, 0]],
    C: [[1, 0], [1, 0]],
    latency: (m: number) => (m === 0 ? prof.stepMs.small : prof.stepMs.large),
    maxBatch: [64, 64],
    outputTokens: s.maxTokens,
    promptLength: s.promptLength,
    feedMsPerToken: [prof.prefillMsPerToken.small, prof.prefillMsPerToken.large],
  };
}

function measure(s: Settings, arrivalsMs: number[], c: Pick<VirtualCase, 'mode' | 'retainState' | 'thresholds' | 'maxWaitMs'>): ServingMetrics {
  return runVirtual({ ...c, concurrency: s.concurrency, requests: s.requests, promptLength: s.promptLength, maxTokens: s.maxTokens, arrivalsMs, slo: s.slo }).metrics;
}

function asMeasured(thresholds: number[], maxWaitMs: number, m: ServingMetrics): Measured {
  return { thresholds, maxWaitMs, goodputReqS: m.goodputReqS ?? 0, p99TpotMs: m.tpotMs.p99, p99TtftMs: m.ttftMs.p99, metrics: m };
}

/** Every threshold vector (small fixed at 1) x deadline through the runtime, on one arrival schedule. */
function sweep(s: Settings, arrivalsMs: number[]): Map<string, Measured> {
  const out = new Map<string, Measured>();
  for (const t of feasibleThresholds([1, s.concurrency], s.concurrency, { 0: 1 })) {
    for (const w of t[1] === 1 ? [s.waits[0]] : s.waits) {
      out.set(key(t, w), asMeasured(t, w, measure(s, arrivalsMs, { mode: 'async-delayed', retainState: true, thresholds: { small: t[0], large: t[1] }, maxWaitMs: w })));
    }
  }
  return out;
}

/** The row for a setting: from the sweep (all-ones rows are priced once, at the first deadline). */
function lookup(all: Map<string, Measured>, t: number[], w: number, waits: number[]): Measured {
  return all.get(key(t, t.every((x) => x === 1) ? waits[0] : w))!;
}

function row(runtime: string, rate: number, m: Measured | ServingMetrics): Row {
  const x = 'metrics' in m ? m.metrics : m;
  return { runtime, profile: PROFILE, rate, throughput_tok_s: x.outputThroughputTokS, goodput_req_s: x.goodputReqS ?? 0, p99_tpot_ms: x.tpotMs.p99, p99_ttft_ms: x.ttftMs.p99 };
}

function runRates(s: Settings): { rows: Row[]; sloChoice: Row[] } {
  const input = modelInput(s);
  // Throughput-only: the closed-loop optimum at N (the chain), with the deployment's default deadline.
  const tOnly = optimiseThresholds({ N: s.concurrency, P: input.P, C: input.C, latency: input.latency, maxBatch: [s.concurrency, s.concurrency] }, { fixed: { 0: 1 } }).best;
  const rows: Row[] = [];
  const sloChoice: Row[] = [];
  for (const [i, rate] of s.rates.entries()) {
    const arrivals = arrivalTimesMs(s.requests, rate, 1, mulberry32(s.seed + i));
    const choice = optimiseForSlo(input, { rateRps: rate, requests: s.requests }, s.slo, { fixed: { 0: 1 }, maxWaitChoices: s.waits, replications: 4 });
    const all = sweep(s, arrivals);
    const chosen = lookup(all, choice.best.thresholds, choice.best.maxWaitMs, s.waits);
    const throughputOnly = lookup(all, tOnly, s.defaultWaitMs, s.waits);
    const sweepBest = chooseForSlo([...all.values()], s.slo);
    const standard = measure(s, arrivals, { mode: 'step-sync', retainState: false });
    const predicted = predictLatency({ ...input, thresholds: chosen.thresholds, maxWaitMs: chosen.maxWaitMs }, { rateRps: rate, requests: s.requests }, s.slo, { replications: 4 });
    rows.push(row('tokenrouter', rate, chosen), row('throughput-only', rate, throughputOnly), row('standard', rate, standard));
    sloChoice.push({
      profile: PROFILE,
      rate,
      chosen: key(chosen.thresholds, chosen.maxWaitMs),
      sweep_best: key(sweepBest.best.thresholds, sweepBest.best.maxWaitMs),
      sweep_best_goodput: sweepBest.best.goodputReqS,
      chosen_goodput: chosen.goodputReqS,
      meets_slo: chosen.p99TpotMs <= s.slo.tpotMs!,
      some_setting_meets: sweepBest.meetsSlo,
      predicted_meets: choice.meetsSlo,
      throughput_only: key(throughputOnly.thresholds, throughputOnly.maxWaitMs),
      throughput_only_goodput: throughputOnly.goodputReqS,
      predicted_p99_tpot_ms: predicted.p99TpotMs,
      predicted_p99_tpot_half_width_ms: predicted.p99TpotHalfWidthMs,
      measured_p99_tpot_ms: chosen.p99TpotMs,
      p99_tpot_error: predicted.p99TpotMs / chosen.p99TpotMs - 1,
    });
    progress('rate', i + 1, s.rates.length);
  }
  return { rows, sloChoice };
}

const prefixed = (p: string, o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [p + k, v]));

function charts(rows: Row[], runtimes: string[], what: string): Record<string, string> {
  const series = (metric: string) => runtimes.map((r) => ({ name: r, points: rows.filter((x) => x.runtime === r).map((x) => [x.rate as number, x[metric] as number] as [number, number]) }));
  return {
    p99_tpot: lineChart({ title: `p99 TPOT vs request rate (${what})`, yLabel: 'p99 TPOT (ms)', xLabel: 'request rate (req/s, Poisson)', series: series('p99_tpot_ms') }),
    goodput: lineChart({ title: `Goodput vs request rate (${what})`, yLabel: 'goodput (req/s)', xLabel: 'request rate (req/s, Poisson)', series: series('goodput_req_s') }),
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const s = readSettings(opts);
  const { rows, sloChoice } = s.skipPaper ? { rows: [], sloChoice: [] } : runRates(s);
  const bundled = s.bundled && (await bundledRates(s.bundled, servingDefaults(new SuiteFlags(opts.flags))));
  printTable(rows);
  printTable(sloChoice);
  if (bundled) {
    printTable(bundled.rows);
    console.log(bundled.firstMiss ? `bundled: standard serving first misses the SLO at ${bundled.firstMiss.rate} req/s; TokenRouter goodput ${bundled.firstMiss.ratio.toFixed(2)}x standard's there` : 'bundled: standard serving met the SLO at every rate');
  }
  const settings = {
    profile: 'paper R2R (small 6.0 ms, large 27.9 ms per step; prefill/extend 0.01 / 0.1 ms per token), virtual time',
    p: s.p,
    concurrency: s.concurrency,
    requests_per_rate: s.requests,
    prompt_tokens: s.promptLength,
    max_tokens: s.maxTokens,
    arrivals: 'Poisson (burstiness 1), one schedule per rate shared by every run at that rate',
    slo: s.slo,
    thresholds_x_deadlines: `large threshold 1..${s.concurrency} (small 1) x max-wait ${s.waits.join('/')} ms`,
    standard_serving: 'step-sync, retainState false (every return re-prefills)',
    throughput_only: `closed-loop chain optimum at N, max-wait ${s.defaultWaitMs} ms`,
    ...(bundled ? { bundled: { runners: bundled.kind, algorithm: 'r2r', mode: 'tokenrouter: async-delayed, thresholds 1/1, retainState; standard: step-sync, no retention', ignore_eos: true, ...s.bundled } } : {}),
  };
  const allRows = [...rows, ...(bundled?.rows ?? [])];
  return {
    suite: 'rate',
    settings,
    results: { rows: allRows, slo_choice: sloChoice, ...(bundled ? { bundled_first_miss: bundled.firstMiss } : {}) },
    output: {
      tables: { 'Rate sweep (paper profile, virtual time)': rows, 'SLO-aware choice vs exhaustive sweep': sloChoice, 'Bundled models over HTTP': bundled?.rows ?? [] },
      charts: { ...(rows.length ? charts(rows, ['tokenrouter', 'throughput-only', 'standard'], `paper R2R profile, virtual time, N=${s.concurrency}, ${s.maxTokens} tokens, p99 TPOT SLO ${s.slo.tpotMs} ms`) : {}), ...(bundled ? prefixed('bundled_', charts(bundled.rows, ['tokenrouter', 'standard'], `bundled models over HTTP, R2R, N=${s.bundled!.concurrency}, ${s.bundled!.maxTokens} tokens, SLO TPOT ${s.bundled!.slo.tpotMs} / TTFT ${s.bundled!.slo.ttftMs} ms`)) : {}) },
      notes: [JSON.stringify(settings)],
    },
  };
}
