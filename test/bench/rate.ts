// Suite rate: an open-loop request-rate sweep of goodput and p99 TPOT in virtual time.
//
// Suite rate: open-loop request-rate sweep on the paper R2R profile in virtual time - goodput and p99 TPOT
// for TokenRouter (the SLO-aware optimiser's choice), the throughput-only choice and standard serving,
// each choice checked against an exhaustive measured sweep of thresholds x max-wait deadlines.
import { arrivalTimesMs } from '../../runtime/loadgen/arrivals.ts';
import type { ServingMetrics } from '../../runtime/loadgen/requestMetrics.ts';
import { PAPER_R2R_PROFILE } from '../../runtime/sim/paperProfile.ts';
import {
  chooseForSlo,
  feasibleThresholds,
  optimiseForSlo,
  optimiseThresholds,
  predictLatency,
  type LatencySlo,
} from '../../runtime/control/throughput/index.ts';
import { mulberry32 } from '../../shared/rng.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { bundledRates, type BundledRateResult, type BundledRateSettings } from './rateBundled.ts';
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
            algorithm: f.str('bundled-algorithm', 'r2r'),
            // empty: the grid comes from a closed-loop capacity probe of each runtime
            rates: f.nums('bundled-rates', []),
            rateFractions: f.nums('bundled-rate-fractions', f.quick ? [0.5, 1.3] : [0.3, 0.6, 0.9, 1.1, 1.3, 1.5, 1.75, 2.1]),
            slo: { tpotMs: f.num('bundled-slo-tpot-ms', 20), ttftMs: f.num('bundled-slo-ttft-ms', 2000) },
            concurrency: f.sized('concurrency', 8, 4),
            durationS: f.sized('bundled-duration-s', 30, 3),
            minRequests: f.sized('bundled-min-requests', 120, 8),
            warmup: f.sized('bundled-warmup', 16, 4),
            probeRequests: f.sized('bundled-probe-requests', 96, 16),
            maxTokens: f.sized('bundled-max-tokens', 128, 32),
            ignoreEos: f.bool('bundled-ignore-eos', false),
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
    P: [
      [1 - s.p, s.p],
      [1, 0],
    ],
    C: [
      [1, 0],
      [1, 0],
    ],
    latency: (m: number) => (m === 0 ? prof.stepMs.small : prof.stepMs.large),
    maxBatch: [64, 64],
    outputTokens: s.maxTokens,
    promptLength: s.promptLength,
    feedMsPerToken: [prof.prefillMsPerToken.small, prof.prefillMsPerToken.large],
  };
}

function measure(s: Settings, arrivalsMs: number[], c: Pick<VirtualCase, 'mode' | 'retainState' | 'thresholds' | 'maxWaitMs'>): ServingMetrics {
  return runVirtual({ ...c, concurrency: s.concurrency, requests: s.requests, promptLength: s.promptLength, maxTokens: s.maxTokens, arrivalsMs, slo: s.slo })
    .metrics;
}

function asMeasured(thresholds: number[], maxWaitMs: number, m: ServingMetrics): Measured {
  return { thresholds, maxWaitMs, goodputReqS: m.goodputReqS ?? 0, p99TpotMs: m.tpotMs.p99, p99TtftMs: m.ttftMs.p99, metrics: m };
}

/** Every threshold vector (small fixed at 1) x deadline through the runtime, on one arrival schedule. */
function sweep(s: Settings, arrivalsMs: number[]): Map<string, Measured> {
  const out = new Map<string, Measured>();
  for (const t of feasibleThresholds([1, s.concurrency], s.concurrency, { 0: 1 })) {
    for (const w of t[1] === 1 ? [s.waits[0]] : s.waits) {
      out.set(
        key(t, w),
        asMeasured(t, w, measure(s, arrivalsMs, { mode: 'async-delayed', retainState: true, thresholds: { small: t[0], large: t[1] }, maxWaitMs: w })),
      );
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
  return {
    runtime,
    profile: PROFILE,
    rate,
    throughput_tok_s: x.outputThroughputTokS,
    goodput_req_s: x.goodputReqS ?? 0,
    p99_tpot_ms: x.tpotMs.p99,
    p99_ttft_ms: x.ttftMs.p99,
  };
}

function runRates(s: Settings): { rows: Row[]; sloChoice: Row[] } {
  const input = modelInput(s);
  // Throughput-only: the closed-loop optimum at N (the chain), with the deployment's default deadline.
  const tOnly = optimiseThresholds(
    { N: s.concurrency, P: input.P, C: input.C, latency: input.latency, maxBatch: [s.concurrency, s.concurrency] },
    { fixed: { 0: 1 } },
  ).best;
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
    const predicted = predictLatency({ ...input, thresholds: chosen.thresholds, maxWaitMs: chosen.maxWaitMs }, { rateRps: rate, requests: s.requests }, s.slo, {
      replications: 4,
    });
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

/** p99 TPOT and goodput against rate; with `bounds`, p99 TTFT too, each latency chart with its SLO bound drawn flat across. */
function charts(rows: Row[], runtimes: string[], what: string, bounds?: { tpotMs?: number; ttftMs?: number }): Record<string, string> {
  const series = (metric: string) =>
    runtimes.map((r) => ({ name: r, points: rows.filter((x) => x.runtime === r).map((x) => [x.rate as number, x[metric] as number] as [number, number]) }));
  const rates = rows.map((r) => r.rate as number);
  const bound = (ms: number | undefined) =>
    ms === undefined || rates.length === 0
      ? []
      : [
          {
            name: `SLO ${ms} ms`,
            points: [
              [Math.min(...rates), ms],
              [Math.max(...rates), ms],
            ] as [number, number][],
          },
        ];
  return {
    p99_tpot: lineChart({
      title: `p99 TPOT vs request rate (${what})`,
      yLabel: 'p99 TPOT (ms)',
      xLabel: 'request rate (req/s, Poisson)',
      series: [...series('p99_tpot_ms'), ...bound(bounds?.tpotMs)],
    }),
    goodput: lineChart({
      title: `Goodput vs request rate (${what})`,
      yLabel: 'goodput (req/s)',
      xLabel: 'request rate (req/s, Poisson)',
      series: series('goodput_req_s'),
    }),
    ...(bounds
      ? {
          p99_ttft: lineChart({
            title: `p99 TTFT (from arrival) vs request rate (${what})`,
            yLabel: 'p99 TTFT (ms)',
            xLabel: 'request rate (req/s, Poisson)',
            series: [...series('p99_ttft_ms'), ...bound(bounds.ttftMs)],
          }),
        }
      : {}),
  };
}

/** The bundled part's settings as the report states them. */
function bundledSettings(b: BundledRateSettings, r: BundledRateResult): Record<string, unknown> {
  return {
    runners: r.kind,
    algorithm: b.algorithm,
    mode: 'tokenrouter: async-delayed, thresholds 1 on every lane, retainState; standard: step-sync, no retention (every return re-prefills)',
    concurrency_cap: `${b.concurrency} in flight (client permits = server maxConcurrency); the rest wait for a permit`,
    latency_from: "each request's scheduled arrival: the wait for a permit counts in TTFT and E2E (TPOT is unchanged by where latency starts)",
    output: b.ignoreEos ? `ignore_eos, ${b.maxTokens} tokens` : `natural EOS, max_tokens ${b.maxTokens}`,
    arrivals: `Poisson, ${b.durationS} s of arrivals per rate (at least ${b.minRequests} requests), one seed per rate shared by both runtimes, run order alternating by rate`,
    warmup: `${b.warmup} untimed closed-loop requests before each measured run`,
    rates: r.derivedRates
      ? `from the capacity probe (${b.probeRequests} closed-loop requests per runtime): ${b.rateFractions.join('/')} x standard serving's req/s, plus 1.2 x TokenRouter's`
      : 'given (--bundled-rates)',
    swept_rates: r.rates,
    slo_ms: b.slo,
    first_miss: "the first swept rate where standard serving's p99 TPOT or p99 TTFT exceeds its bound",
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const s = readSettings(opts);
  const { rows, sloChoice } = s.skipPaper ? { rows: [], sloChoice: [] } : runRates(s);
  const serving = servingDefaults(new SuiteFlags(opts.flags));
  const bundled = s.bundled && (await bundledRates(s.bundled, serving));
  printTable(rows);
  printTable(sloChoice);
  if (bundled) {
    printTable(bundled.capacity as unknown as Row[]);
    printTable(bundled.rows);
    printTable(bundled.runs);
    const fm = bundled.firstMiss;
    console.log(
      fm
        ? `bundled: standard serving first misses the SLO at ${fm.rate} req/s (p99 ${fm.missed.join(' and ')}); TokenRouter goodput ${fm.ratio.toFixed(2)}x standard's there`
        : 'bundled: standard serving met the SLO at every rate',
    );
    const cap = bundled.sloCapacity;
    console.log(
      `bundled: highest rate within the SLO: ${cap.runtimes.map((c) => `${c.runtime} ${c.rate === null ? 'none' : `${c.at_least ? '≥ ' : ''}${c.rate} req/s`}`).join(', ')}${cap.ratio === null ? '' : ` (${cap.ratio.toFixed(2)}x)`}`,
    );
    if (!bundled.standardMeetsAtLightest)
      console.log('bundled: standard serving misses the SLO even at the lightest rate: the SLO is too tight for this comparison');
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
    ...(bundled ? { bundled: { ...bundledSettings(s.bundled!, bundled), placement: serving.placement, client: serving.client } } : {}),
  };
  const allRows = [...rows, ...(bundled?.rows ?? [])];
  return {
    suite: 'rate',
    settings,
    results: {
      rows: allRows,
      slo_choice: sloChoice,
      ...(bundled
        ? {
            bundled_first_miss: bundled.firstMiss,
            bundled_capacity: bundled.capacity,
            bundled_runs: bundled.runs,
            bundled_slo_capacity: bundled.sloCapacity,
            bundled_standard_meets_slo_at_lightest: bundled.standardMeetsAtLightest,
          }
        : {}),
    },
    output: {
      tables: {
        'Rate sweep (paper profile, virtual time)': rows,
        'SLO-aware choice vs exhaustive sweep': sloChoice,
        'Bundled models over HTTP': bundled?.rows ?? [],
        'Bundled models: capacity probe (closed loop)': (bundled?.capacity ?? []) as unknown as Row[],
        'Bundled models: every run': bundled?.runs ?? [],
      },
      charts: {
        ...(rows.length
          ? charts(
              rows,
              ['tokenrouter', 'throughput-only', 'standard'],
              `paper R2R profile, virtual time, N=${s.concurrency}, ${s.maxTokens} tokens, p99 TPOT SLO ${s.slo.tpotMs} ms`,
            )
          : {}),
        ...(bundled
          ? prefixed(
              'bundled_',
              charts(
                bundled.rows,
                ['tokenrouter', 'standard'],
                `bundled models over HTTP, ${s.bundled!.algorithm}, N=${s.bundled!.concurrency}, ${s.bundled!.ignoreEos ? `${s.bundled!.maxTokens} tokens (ignore_eos)` : `natural EOS (max ${s.bundled!.maxTokens})`}, SLO p99 TPOT ${s.bundled!.slo.tpotMs} / TTFT ${s.bundled!.slo.ttftMs} ms`,
                s.bundled!.slo,
              ),
            )
          : {}),
      },
      notes: [JSON.stringify(settings)],
    },
  };
}
