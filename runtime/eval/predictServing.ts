// A routing's serving cost on this server: committed tok/s and p99 TPOT at a concurrency, from its P and C and the served models' measured step latency.
import type { Prediction, RoutingStats } from '../../shared/api/evaluate.ts';
import { TokenRouterError } from '../errors.ts';
import { evaluateThresholds, optimiseThresholds, predictLatency, type LatencySlo, type OptimiseInput } from '../control/throughput/index.ts';
import { fitStepLatency, type BatchTiming, type StepFit } from './routingCounts.ts';

/** The live controller's cap on the batch sizes the chain considers (runtime/control/autoThresholds.ts). */
const MAX_BATCH_CAP = 32;
/** Requests and runs of the latency simulation behind each p99: ≈ 50 ms on the bundled pair. */
const LATENCY_REQUESTS = 300;
const LATENCY_REPLICATIONS = 3;

export interface ServingInput {
  routing: RoutingStats;
  meanOutputTokens: number;
  concurrency: number;
  /** The server's lanes, in any order: each model's batch cap and the threshold in force. */
  lanes: readonly { name: string; maxBatch: number; threshold: number }[];
  maxWaitMs: number;
  /** The predicted algorithm's own batches (its evaluation; a deployed one's serving too). */
  batches: readonly BatchTiming[];
  /** Other traffic's batches on this server: their wall times, with the algorithm's own gaps (fitStepLatency). */
  otherBatches?: readonly BatchTiming[];
  /** The entry's measured ms per request outside the cluster (entryProfile.ts); null or absent: none measured, the clients all count as in flight. */
  entryMs?: number | null;
  /** The run's measured ms per request on no model (crossing threads: TransitTimes); null or absent: none. */
  transitMs?: number | null;
  /** The clients' own ms per request outside the server (network, their turnaround); absent: 0. */
  clientMs?: number;
  slo?: LatencySlo;
}

export type ServingPrediction = Omit<Prediction, 'runId' | 'liveBatches'>;

/**
 * Each batch size's step latency is its mean over the whole run: a real model's step costs what it
 * feeds, and a routed large's catch-up prefills (a fifth of its batches, the slowest) are what
 * serving it costs, which a median or a trimmed mean reads past. On the bundled family
 * (`npm run bench -- predict`, quiet machine, one run each) the median over-predicted all five
 * built-ins by 1.9-19.2 %, the mean less its slowest 5 % r2r by 19.4 %, the mean missed by -7.3 to
 * +13.7 %. The price: a step another process stalls moves it (the band's quartiles are not).
 */
const CENTRE: StepFit = {};
/** The band: every step at the 25th, then the 75th percentile of the step latencies fitted on. */
export const BAND = [0.25, 0.75] as const;

/** The low and high tok/s of the band around `tokS` (slow steps give the low one), ordered and holding the centre. */
export function bandOf(tokS: number, slowTokS: number, fastTokS: number): { low: number; high: number } {
  return { low: Math.min(tokS, slowTokS, fastTokS), high: Math.max(tokS, slowTokS, fastTokS) };
}

/**
 * A closed loop of `c` clients whose every request also spends `entryMs` outside the engine (the
 * HTTP entry): by Little's law n + X(n)·entryMs/L = c, with X(n) the chain's committed tok/s at n
 * in flight and L tokens per request. X grows with n, so the root lies between the whole n where
 * the left side crosses c; X is interpolated there.
 */
export function closedLoopThroughput(c: number, entryMs: number, tokensPerRequest: number, X: (n: number) => number): { inEngine: number; tokS: number } {
  if (!(entryMs > 0)) return { inEngine: c, tokS: X(c) };
  const g = (n: number, x: number) => n + (x * entryMs) / 1000 / tokensPerRequest;
  let hi = { n: c, x: X(c) };
  for (let n = c - 1; n >= 0; n--) {
    const lo = { n, x: n === 0 ? 0 : X(n) };
    const gl = g(lo.n, lo.x);
    if (gl <= c) {
      const f = (c - gl) / (g(hi.n, hi.x) - gl);
      return { inEngine: lo.n + f, tokS: lo.x + f * (hi.x - lo.x) };
    }
    hi = lo;
  }
  return { inEngine: 0, tokS: 0 };
}

/**
 * The chain over the models the run used (a model it never stepped on adds nothing but states),
 * the thresholds the optimiser picks there, and the same at the thresholds in force; p99 TPOT from
 * the latency model at each. Latency comes from this server's batches, each from its launch to its
 * model's next launch (fitStepLatency): they carry the scheduling cost and the gaps between a
 * model's batches that a profile of the model alone, or a batch's wall time, misses. The entry's
 * measured time per request outside the cluster (`entryMs`) and the run's time per request on no
 * model inside it (`transitMs`: crossing threads), and the clients' own time outside the server
 * (`clientMs`), keep some of the N clients out of every model's queue (closedLoopThroughput); the
 * entry's per-token work on the main thread is in the wall times of the live traffic's batches
 * (`otherBatches`), whose gaps are the algorithm's own (fitStepLatency).
 */
export function predictServing(input: ServingInput): ServingPrediction {
  const { routing, concurrency: N } = input;
  const used = routing.steps.map((s, i) => (s > 0 ? i : -1)).filter((i) => i >= 0);
  if (used.length === 0) throw new TokenRouterError('invalid_request', 'the evaluation recorded no model steps: nothing to predict from', 'runId');
  const names = used.map((i) => routing.models[i]);
  const lanes = names.map((m) => {
    const lane = input.lanes.find((l) => l.name === m);
    if (!lane) throw new TokenRouterError('invalid_request', `model "${m}" of the evaluation is not served here any more`, 'runId');
    return lane;
  });
  const maxBatch = lanes.map((l) => Math.max(1, Math.min(l.maxBatch, MAX_BATCH_CAP, N)));
  const fitAt = (fit: StepFit) => fitStepLatency(input.batches, names, Math.max(...maxBatch), input.otherBatches, fit);
  const fit = fitAt(CENTRE);
  if (fit.missing.length > 0) {
    throw new TokenRouterError(
      'unavailable',
      `no step latency measured for model ${fit.missing.join(', ')} on this server yet: evaluate again or send it traffic`,
      'runId',
    );
  }
  const P = used.map((i) => {
    const row = used.map((j) => routing.P[i][j]);
    const s = row.reduce((a, b) => a + b, 0);
    return row.map((x) => x / s);
  });
  const C = used.map((i) => used.map((j) => routing.C[i][j]));
  const model: OptimiseInput = { N, P, C, latency: fit.latency, maxBatch };
  // the same chain with every step at the quartiles of the step latencies fitted on: the band the spread of those steps gives
  const fast: OptimiseInput = { ...model, latency: fitAt({ quantile: BAND[0] }).latency };
  const slow: OptimiseInput = { ...model, latency: fitAt({ quantile: BAND[1] }).latency };
  const named = (t: readonly number[]) => Object.fromEntries(names.map((m, k) => [m, t[k]]));
  const outputTokens = Math.max(1, Math.round(input.meanOutputTokens));
  // both keep a request out of every model's queue, where the chain has all of them: the engine's concurrency is what is left
  const outsideMs = (input.entryMs ?? 0) + (input.transitMs ?? 0) + (input.clientMs ?? 0);
  const ones = lanes.map(() => 1);
  const feasible = (t: readonly number[], n: number) => t.reduce((s, x) => s + x - 1, 0) < n;
  // The engine's concurrency under N clients with the entry's time left out: thresholds chosen there.
  const engineN = (thresholds: readonly number[], on = model) =>
    closedLoopThroughput(
      N,
      outsideMs,
      input.meanOutputTokens || 1,
      (n) => evaluateThresholds({ ...on, N: n }, feasible(thresholds, n) ? [...thresholds] : ones).tokensPerSec,
    );
  const opt = optimiseThresholds({ ...model, N: Math.max(1, Math.round(engineN(ones).inEngine)) });
  const setting = (thresholds: number[]) => {
    const { inEngine, tokS } = engineN(thresholds);
    const n = Math.max(1, Math.round(inEngine));
    const lat = predictLatency(
      { ...model, N: feasible(thresholds, n) ? n : N, thresholds, maxWaitMs: input.maxWaitMs, outputTokens },
      { requests: LATENCY_REQUESTS },
      input.slo ?? {},
      { replications: LATENCY_REPLICATIONS },
    );
    const slo = input.slo && (input.slo.tpotMs !== undefined || input.slo.ttftMs !== undefined);
    return {
      thresholds: named(thresholds),
      tokS,
      tokSBand: bandOf(tokS, engineN(thresholds, slow).tokS, engineN(thresholds, fast).tokS),
      inEngine,
      p99TpotMs: lat.p99TpotMs,
      meanTpotMs: lat.meanTpotMs,
      ...(slo
        ? {
            goodputRps: lat.goodputReqS,
            meetsSlo:
              (input.slo!.tpotMs === undefined || lat.p99TpotMs <= input.slo!.tpotMs) &&
              (input.slo!.ttftMs === undefined || lat.p99TtftMs <= input.slo!.ttftMs),
          }
        : {}),
    };
  };
  const now = lanes.map((l, k) => Math.min(l.threshold, maxBatch[k]));
  const bestRow = opt.table[0];
  return {
    concurrency: N,
    best: setting(opt.best),
    current: feasible(now, N) ? setting(now) : null,
    entryMs: input.entryMs ?? null,
    transitMs: input.transitMs ?? null,
    clientMs: input.clientMs ?? 0,
    latencyBatches: fit.counts,
    method: bestRow?.method ?? 'chain',
  };
}
