// A routing's serving cost on this server: committed tok/s and p99 TPOT at a concurrency, from its P and C and the served models' measured step latency.
import type { Prediction, RoutingStats } from '../../shared/api/evaluate.ts';
import { TokenRouterError } from '../errors.ts';
import { optimiseThresholds, predictLatency, rowFor, type LatencySlo } from '../throughput/index.ts';
import { fitStepLatency, type BatchTiming } from './routingCounts.ts';

/** The live controller's cap on the batch sizes the chain considers (runtime/scheduler/autoThresholds.ts). */
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
  batches: readonly BatchTiming[];
  slo?: LatencySlo;
}

export type ServingPrediction = Omit<Prediction, 'runId'>;

/**
 * The chain over the models the run used (a model it never stepped on adds nothing but states),
 * the thresholds the optimiser picks there, and the same at the thresholds in force; p99 TPOT from
 * the latency model at each. Latency comes from this server's batches, each from its launch to its
 * model's next launch (fitStepLatency): they carry the scheduling cost and the gaps between a
 * model's batches that a profile of the model alone, or a batch's wall time, misses.
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
  const fit = fitStepLatency(input.batches, names, Math.max(...maxBatch));
  if (fit.missing.length > 0) {
    throw new TokenRouterError('unavailable', `no step latency measured for model ${fit.missing.join(', ')} on this server yet: evaluate again or send it traffic`, 'runId');
  }
  const P = used.map((i) => {
    const row = used.map((j) => routing.P[i][j]);
    const s = row.reduce((a, b) => a + b, 0);
    return row.map((x) => x / s);
  });
  const C = used.map((i) => used.map((j) => routing.C[i][j]));
  const model = { N, P, C, latency: fit.latency, maxBatch };
  const opt = optimiseThresholds(model);
  const named = (t: readonly number[]) => Object.fromEntries(names.map((m, k) => [m, t[k]]));
  const outputTokens = Math.max(1, Math.round(input.meanOutputTokens));
  const setting = (thresholds: number[], tokS: number) => {
    const lat = predictLatency({ ...model, thresholds, maxWaitMs: input.maxWaitMs, outputTokens }, { requests: LATENCY_REQUESTS }, input.slo ?? {}, { replications: LATENCY_REPLICATIONS });
    const slo = input.slo && (input.slo.tpotMs !== undefined || input.slo.ttftMs !== undefined);
    return {
      thresholds: named(thresholds),
      tokS,
      p99TpotMs: lat.p99TpotMs,
      meanTpotMs: lat.meanTpotMs,
      ...(slo ? { goodputRps: lat.goodputReqS, meetsSlo: (input.slo!.tpotMs === undefined || lat.p99TpotMs <= input.slo!.tpotMs) && (input.slo!.ttftMs === undefined || lat.p99TtftMs <= input.slo!.ttftMs) } : {}),
    };
  };
  const now = lanes.map((l, k) => Math.min(l.threshold, maxBatch[k]));
  const feasibleNow = now.reduce((s, t) => s + t - 1, 0) < N;
  const bestRow = opt.table[0];
  return {
    concurrency: N,
    best: setting(opt.best, opt.predicted),
    current: feasibleNow ? setting(now, rowFor(model, opt, now).tokensPerSec) : null,
    latencyBatches: fit.counts,
    method: bestRow?.method ?? 'chain',
  };
}
