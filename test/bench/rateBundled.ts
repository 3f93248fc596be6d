// The rate suite's second part: the bundled models over HTTP at open-loop rates.
//
// The rate suite's second part: the bundled models over HTTP at open-loop rates, TokenRouter mode beside
// standard serving at each rate (one server each, the same arrivals), and the goodput ratio where standard serving first misses the SLO.
import os from 'node:os';
import type { Slo } from '../../runtime/loadgen/goodput.ts';
import { loadRunnerSet, type RunnerSet } from './benchRunners.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { ALGORITHM_LANES } from './serving.ts';
import { BASELINE, runServingCase, type ServingCase, type ServingDefaults, type ServingMode } from './servingCase.ts';
import type { Row } from '../../runtime/util/table.ts';

export interface BundledRateSettings {
  runners: string | undefined;
  algorithm: string;
  /** Rates to sweep; empty: derived from the capacity probe (`rateFractions` of standard serving's capacity, plus one past TokenRouter's). */
  rates: number[];
  rateFractions: number[];
  slo: Slo;
  concurrency: number;
  /** Seconds of arrivals per rate: a run is sized by time, so past saturation the queue has time to build. */
  durationS: number;
  /** At least this many measured requests per rate, so a p99 rests on ≥ 1 % of a hundred or more. */
  minRequests: number;
  /** Untimed requests before each measured run (its server is new; the models are shared and stay warm). */
  warmup: number;
  /** Closed-loop requests per runtime for the capacity probe. */
  probeRequests: number;
  maxTokens: number;
  /** false: natural EOS (the serving suite's default); true: every request runs to maxTokens. */
  ignoreEos: boolean;
}

export interface Capacity {
  runtime: string;
  /** Closed loop of `concurrency` clients: completed requests per second, and output tokens per second. */
  req_s: number;
  tok_s: number;
  p99_tpot_ms: number;
  mean_output_tokens: number;
}

export interface FirstMiss {
  rate: number;
  /** Which of standard serving's p99 bounds the rate broke. */
  missed: ('ttft' | 'tpot')[];
  standard_p99_tpot_ms: number;
  standard_p99_ttft_ms: number;
  tokenrouter_goodput_req_s: number;
  standard_goodput_req_s: number;
  ratio: number;
}

/** The highest swept rate a runtime serves within the SLO (p99 bounds met there and at every lighter rate): what an operator can offer it. */
export interface SloCapacity {
  runtime: string;
  /** null: it missed at the lightest rate. */
  rate: number | null;
  /** It met the SLO at every swept rate, so its capacity is at least `rate`. */
  at_least: boolean;
}

export interface BundledRateResult {
  kind: string;
  rows: Row[];
  /** Per run: what the rows leave out (request counts, queueing at the cap, the machine's load). */
  runs: Row[];
  capacity: Capacity[];
  /** The rates swept, and whether they came from the probe. */
  rates: number[];
  derivedRates: boolean;
  /** The first rate whose standard-serving p99 TPOT or TTFT exceeds the SLO, and TokenRouter's goodput over standard serving's there. */
  firstMiss: FirstMiss | null;
  /** Per runtime, the highest rate within the SLO, and TokenRouter's over standard serving's (grid-quantised). */
  sloCapacity: { runtimes: SloCapacity[]; ratio: number | null };
  /** Whether standard serving met the SLO at the lightest rate (the SLO is a fair one only if it does). */
  standardMeetsAtLightest: boolean;
}

const TOKENROUTER: ServingMode = { label: 'tokenrouter', mode: 'async-delayed', retainState: true };
const RUNTIMES = [
  ['tokenrouter', TOKENROUTER],
  ['standard', BASELINE],
] as const;

/** Requests for one rate: `durationS` of arrivals, at least `minRequests`. */
export function requestsForRate(rate: number, s: Pick<BundledRateSettings, 'durationS' | 'minRequests'>): number {
  return Math.max(s.minRequests, Math.ceil(rate * s.durationS));
}

/** Two significant figures: rates a reader can repeat with --bundled-rates. */
const round2 = (x: number) => Number(x.toPrecision(2));

/**
 * The grid from measured capacities: fractions of standard serving's (dense around its saturation,
 * where the first miss is), and one point past TokenRouter's when the fractions stop short of it.
 */
export function ratesFromCapacity(standardReqS: number, tokenrouterReqS: number, fractions: readonly number[]): number[] {
  const rates = fractions.map((f) => round2(f * standardReqS));
  const pastTr = round2(1.2 * tokenrouterReqS);
  if (pastTr > Math.max(...rates)) rates.push(pastTr);
  return [...new Set(rates)].filter((r) => r > 0).sort((a, b) => a - b);
}

function caseFor(s: BundledRateSettings, serving: ServingDefaults): Omit<ServingCase, 'mode'> {
  const lanes = ALGORITHM_LANES[s.algorithm];
  if (!lanes) throw new Error(`unknown algorithm "${s.algorithm}"; known: ${Object.keys(ALGORITHM_LANES).join(', ')}`);
  return {
    ...serving,
    algorithm: s.algorithm,
    lanes,
    concurrency: s.concurrency,
    requests: 0,
    warmup: s.warmup,
    maxTokens: s.maxTokens,
    ignoreEos: s.ignoreEos,
    burstiness: 1,
    slo: s.slo,
  };
}

async function probe(set: RunnerSet, s: BundledRateSettings, base: Omit<ServingCase, 'mode'>): Promise<Capacity[]> {
  const out: Capacity[] = [];
  for (const [runtime, mode] of RUNTIMES) {
    const m = (await runServingCase(set, { ...base, requests: s.probeRequests, requestRate: Infinity, mode })).run.metrics;
    out.push({ runtime, req_s: m.requestThroughputRps, tok_s: m.outputThroughputTokS, p99_tpot_ms: m.tpotMs.p99, mean_output_tokens: m.meanOutputTokens });
  }
  return out;
}

const meets = (r: Row, slo: Slo) => (r.p99_tpot_ms as number) <= (slo.tpotMs ?? Infinity) && (r.p99_ttft_ms as number) <= (slo.ttftMs ?? Infinity);

export async function bundledRates(s: BundledRateSettings, serving: ServingDefaults): Promise<BundledRateResult> {
  const set = await loadRunnerSet(s.runners);
  const base = caseFor(s, serving);
  const rows: Row[] = [];
  const runs: Row[] = [];
  let capacity: Capacity[] = [];
  let rates = s.rates;
  try {
    if (rates.length === 0 && !(s.probeRequests > 0))
      throw new Error('the bundled rate grid needs --bundled-rates or a capacity probe (--bundled-probe-requests > 0)');
    if (s.probeRequests > 0) capacity = await probe(set, s, base);
    for (const c of capacity)
      console.error(`[rate bundled] capacity, closed loop of ${s.concurrency}: ${c.runtime} ${c.req_s.toFixed(2)} req/s, ${c.tok_s.toFixed(0)} tok/s`);
    if (rates.length === 0)
      rates = ratesFromCapacity(
        capacity.find((c) => c.runtime === 'standard')!.req_s,
        capacity.find((c) => c.runtime === 'tokenrouter')!.req_s,
        s.rateFractions,
      );
    for (const [i, rate] of rates.entries()) {
      const requests = requestsForRate(rate, s);
      // Both runtimes take the same seeded arrivals; the order alternates by rate so a drift in the machine's load favours neither.
      const order = i % 2 === 0 ? RUNTIMES : [...RUNTIMES].reverse();
      const atRate: Row[] = [];
      for (const [runtime, mode] of order) {
        const load1 = os.loadavg()[0];
        const m = (await runServingCase(set, { ...base, mode, requests, requestRate: rate, seed: i + 1 })).run.metrics;
        console.error(
          `[rate bundled] ${rate} req/s ${runtime}: goodput ${(m.goodputReqS ?? 0).toFixed(2)} req/s, p99 TPOT ${m.tpotMs.p99.toFixed(1)} ms, p99 TTFT ${m.ttftMs.p99.toFixed(0)} ms, ${m.completed}/${requests} done, load ${load1.toFixed(1)}`,
        );
        atRate.push({
          runtime,
          profile: `${set.kind}-http`,
          rate,
          throughput_tok_s: m.outputThroughputTokS,
          goodput_req_s: m.goodputReqS ?? 0,
          p99_tpot_ms: m.tpotMs.p99,
          p99_ttft_ms: m.ttftMs.p99,
        });
        runs.push({
          runtime,
          rate,
          requests,
          completed: m.completed,
          failed: m.failed,
          slo_met: m.sloMet ?? 0,
          request_throughput_req_s: m.requestThroughputRps,
          mean_queue_ms: m.queueMs.mean,
          p99_queue_ms: m.queueMs.p99,
          median_ttft_ms: m.ttftMs.median,
          median_tpot_ms: m.tpotMs.median,
          p99_e2e_ms: m.e2eMs.p99,
          mean_output_tokens: m.meanOutputTokens,
          duration_s: m.durationMs / 1000,
          load_1m_before: load1,
          load_1m_after: os.loadavg()[0],
        });
      }
      // tokenrouter first in the rows whatever the run order, so rows read the same at every rate
      rows.push(...RUNTIMES.map(([r]) => atRate.find((x) => x.runtime === r)!));
      progress('rate bundled', i + 1, rates.length);
    }
  } finally {
    await set.close();
  }
  const lightest = rows.find((r) => r.runtime === 'standard' && r.rate === rates[0]);
  return {
    kind: set.kind,
    rows,
    runs,
    capacity,
    rates,
    derivedRates: s.rates.length === 0,
    firstMiss: firstMiss(rows, rates, s.slo),
    sloCapacity: sloCapacities(rows, rates, s.slo),
    standardMeetsAtLightest: lightest !== undefined && meets(lightest, s.slo),
  };
}

export function firstMiss(rows: readonly Row[], rates: readonly number[], slo: Slo): FirstMiss | null {
  for (const rate of rates) {
    const at = (runtime: string) => rows.find((r) => r.runtime === runtime && r.rate === rate)!;
    const std = at('standard');
    if (meets(std, slo)) continue;
    const missed: FirstMiss['missed'] = [];
    if ((std.p99_ttft_ms as number) > (slo.ttftMs ?? Infinity)) missed.push('ttft');
    if ((std.p99_tpot_ms as number) > (slo.tpotMs ?? Infinity)) missed.push('tpot');
    const tr = at('tokenrouter');
    const ratio = (tr.goodput_req_s as number) / Math.max(std.goodput_req_s as number, 1e-9);
    return {
      rate,
      missed,
      standard_p99_tpot_ms: std.p99_tpot_ms as number,
      standard_p99_ttft_ms: std.p99_ttft_ms as number,
      tokenrouter_goodput_req_s: tr.goodput_req_s as number,
      standard_goodput_req_s: std.goodput_req_s as number,
      ratio,
    };
  }
  return null;
}

export function sloCapacities(rows: readonly Row[], rates: readonly number[], slo: Slo): BundledRateResult['sloCapacity'] {
  const runtimes = RUNTIMES.map(([runtime]): SloCapacity => {
    let rate: number | null = null;
    for (const r of rates) {
      const at = rows.find((x) => x.runtime === runtime && x.rate === r);
      if (!at || !meets(at, slo)) return { runtime, rate, at_least: false };
      rate = r;
    }
    return { runtime, rate, at_least: true };
  });
  const [tr, std] = runtimes;
  return { runtimes, ratio: tr.rate !== null && std.rate !== null ? tr.rate / std.rate : null };
}
