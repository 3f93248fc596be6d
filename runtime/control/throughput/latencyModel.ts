// Latency predictions with a stated error, from independent replications.
//
// Independent replications of the latency simulation, and
// their p99s' Student-t 95 % half-width (a p99 of one run is itself a noisy estimate).
import { t975 } from './predictThroughput.ts';
import { simulateLatency, type LatencyInput, type LatencyLoad, type LatencyRun, type LatencySlo } from './simulateLatency.ts';

export interface LatencyPrediction {
  meanTtftMs: number;
  p99TtftMs: number;
  meanTpotMs: number;
  p99TpotMs: number;
  meanE2eMs: number;
  p99E2eMs: number;
  meanQueueMs: number;
  p99QueueMs: number;
  throughputTokS: number;
  requestRps: number;
  goodputReqS: number;
  /** 95 % half-width of p99TpotMs over the replications. */
  p99TpotHalfWidthMs: number;
  replications: number;
}

export interface LatencyOptions {
  /** Independent runs, seeds seed, seed + 1, … (default 4). */
  replications?: number;
  seed?: number;
}

const avg = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export function predictLatency(input: LatencyInput, load: LatencyLoad, slo: LatencySlo = {}, opts: LatencyOptions = {}): LatencyPrediction {
  const k = Math.max(1, opts.replications ?? 4);
  const seed = opts.seed ?? load.seed ?? 1;
  const runs: LatencyRun[] = [];
  for (let i = 0; i < k; i++) runs.push(simulateLatency(input, { ...load, seed: seed + i }, slo));
  const of = (pick: (r: LatencyRun) => number) => avg(runs.map(pick));
  const p99 = runs.map((r) => r.tpotMs.p99);
  const mean = avg(p99);
  const sd = k > 1 ? Math.sqrt(p99.reduce((a, x) => a + (x - mean) ** 2, 0) / (k - 1)) : Infinity;
  return {
    meanTtftMs: of((r) => r.ttftMs.mean),
    p99TtftMs: of((r) => r.ttftMs.p99),
    meanTpotMs: of((r) => r.tpotMs.mean),
    p99TpotMs: mean,
    meanE2eMs: of((r) => r.e2eMs.mean),
    p99E2eMs: of((r) => r.e2eMs.p99),
    meanQueueMs: of((r) => r.queueMs.mean),
    p99QueueMs: of((r) => r.queueMs.p99),
    throughputTokS: of((r) => r.throughputTokS),
    requestRps: of((r) => r.requestRps),
    goodputReqS: of((r) => r.goodputReqS),
    p99TpotHalfWidthMs: k > 1 ? t975(k - 1) * (sd / Math.sqrt(k)) : Infinity,
    replications: k,
  };
}
