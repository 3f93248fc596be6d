// The rate suite's second part: the bundled models over HTTP at open-loop rates, TokenRouter mode beside
// standard serving at each rate (one server each, the same load), and the goodput ratio where standard serving first misses the SLO.
import type { Slo } from '../loadgen/goodput.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { progress } from './benchSuite.ts';
import { BASELINE, runServingCase, type ServingDefaults } from './servingCase.ts';
import type { Row } from './table.ts';

export interface BundledRateSettings {
  runners: string | undefined;
  rates: number[];
  slo: Slo;
  concurrency: number;
  requests: number;
  maxTokens: number;
}

export interface BundledRateResult {
  kind: string;
  rows: Row[];
  /** The first rate whose standard-serving p99 TPOT or TTFT exceeds the SLO, and TokenRouter's goodput over standard serving's there. */
  firstMiss: { rate: number; tokenrouter_goodput_req_s: number; standard_goodput_req_s: number; ratio: number } | null;
}

const TOKENROUTER = { label: 'tokenrouter', mode: 'async-delayed' as const, retainState: true };

export async function bundledRates(s: BundledRateSettings, serving: ServingDefaults): Promise<BundledRateResult> {
  const set = await loadRunnerSet(s.runners);
  const rows: Row[] = [];
  try {
    for (const [i, rate] of s.rates.entries()) {
      const base = { ...serving, algorithm: 'r2r', lanes: { small: 'small', large: 'large' }, concurrency: s.concurrency, requests: s.requests, warmup: s.concurrency, maxTokens: s.maxTokens, ignoreEos: true, requestRate: rate, burstiness: 1, slo: s.slo };
      // Side by side at each rate: the two servers take the same offered load one after the other.
      for (const [runtime, mode] of [['tokenrouter', TOKENROUTER], ['standard', BASELINE]] as const) {
        const m = (await runServingCase(set, { ...base, mode })).run.metrics;
        rows.push({ runtime, profile: `${set.kind}-http`, rate, throughput_tok_s: m.outputThroughputTokS, goodput_req_s: m.goodputReqS ?? 0, p99_tpot_ms: m.tpotMs.p99, p99_ttft_ms: m.ttftMs.p99 });
      }
      progress('rate bundled', i + 1, s.rates.length);
    }
  } finally {
    await set.close();
  }
  return { kind: set.kind, rows, firstMiss: firstMiss(rows, s) };
}

function firstMiss(rows: Row[], s: BundledRateSettings): BundledRateResult['firstMiss'] {
  for (const rate of s.rates) {
    const at = (runtime: string) => rows.find((r) => r.runtime === runtime && r.rate === rate)!;
    const std = at('standard');
    if ((std.p99_tpot_ms as number) <= (s.slo.tpotMs ?? Infinity) && (std.p99_ttft_ms as number) <= (s.slo.ttftMs ?? Infinity)) continue;
    const tr = at('tokenrouter');
    const ratio = (tr.goodput_req_s as number) / Math.max(std.goodput_req_s as number, 1e-9);
    return { rate, tokenrouter_goodput_req_s: tr.goodput_req_s as number, standard_goodput_req_s: std.goodput_req_s as number, ratio };
  }
  return null;
}
