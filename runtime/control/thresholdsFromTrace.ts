// Thresholds from a recorded trace: the live controller's estimate and optimiser, run once over a whole run.
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import { TokenRouterError } from '../errors.ts';
import { optimiseThresholds, rowFor } from './throughput/index.ts';
import { meanInFlight, traceModels } from '../trace/traceSummary.ts';
import { optimiserInputFor, THRESHOLD_HYSTERESIS } from './autoThresholds.ts';
import { RoutingEstimator, type RoutingEstimate } from './routingEstimator.ts';

export interface TraceThresholdOptions {
  /** Requests in flight; default: the trace's mean (Little's law over its finished requests). */
  concurrency?: number;
  /** Largest batch the model considers per model (default min(32, N)). */
  maxBatch?: number;
  /** Thresholds held fixed, by model name. */
  fixed?: Readonly<Record<string, number>>;
  /** Step latency to use instead of the trace's (ms[model][batch − 1], models in `models` order), e.g. from profiling the runners. */
  latency?: Readonly<Record<string, readonly number[]>>;
  /** Progress of the threshold search (see OptimiseOptions.onProgress). */
  onProgress?: (evaluated: number, of: number | undefined) => void;
}

export interface TraceThresholds {
  /** Models that carried traffic, in the order of their first batch. */
  models: string[];
  N: number;
  /** How N was obtained. */
  nSource: 'given' | 'trace';
  estimate: Pick<RoutingEstimate, 'P' | 'C'> & { latency: number[][]; contendedLatency: number[][]; steps: number[] };
  best: Record<string, number>;
  predictedBest: number;
  /** Predicted committed tok/s at thresholds 1 (fixed models at their fixed value). */
  predictedOnes: number;
  /** predictedBest / predictedOnes − 1. */
  gainOverOnes: number;
  /** Thresholds recorded in the trace's config event, with their prediction, when there is one. */
  inForce: { thresholds: Record<string, number>; predicted: number } | null;
  /** Whether the live controller would switch from thresholds 1 (gain above its hysteresis). */
  wouldApply: boolean;
  /** Best candidates, best first. */
  table: { thresholds: Record<string, number>; predicted_tok_s: number }[];
}

export function thresholdsFromTrace(events: readonly TraceEvent[], opts: TraceThresholdOptions = {}): TraceThresholds {
  const models = traceModels(events);
  if (models.length === 0)
    throw new TokenRouterError('invalid_request', 'the trace has no batch events: nothing to estimate step latency or routing from', 'trace');
  let N = opts.concurrency;
  const nSource = N === undefined ? 'trace' : 'given';
  if (N === undefined) {
    const mean = meanInFlight(events);
    if (mean === null)
      throw new TokenRouterError('invalid_request', 'the trace has no finished requests to estimate concurrency from; pass --concurrency', 'concurrency');
    N = Math.max(1, Math.round(mean));
  }
  const cap = opts.maxBatch ?? Math.min(32, N);
  const estimator = new RoutingEstimator(models, Infinity, cap);
  let last = -Infinity;
  let config: TraceEventOf<'config'> | null = null;
  for (const e of events) {
    estimator.onEvent(e);
    last = Math.max(last, e.type === 'batch' ? e.end : e.t);
    if (e.type === 'config') config = e;
  }
  const est = estimator.estimate(last, 1);
  if (!est)
    throw new TokenRouterError(
      'invalid_request',
      'the trace has too few timed decode steps on a model that carried traffic to estimate its step latency',
      'trace',
    );
  if (opts.latency) {
    for (const [i, m] of models.entries()) {
      const row = opts.latency[m];
      if (!row) continue;
      est.latency[i] = [...row];
      est.contendedLatency[i] = [...row];
    }
  }
  const lanes = models.map((name) => ({ name, maxBatch: cap }));
  const { input, used } = optimiserInputFor(est, lanes, N, cap, opts.fixed);
  const { fixed, ...model } = input;
  const opt = optimiseThresholds(model, { fixed, onProgress: opts.onProgress });
  const usedNames = used.map((i) => models[i]);
  const named = (t: readonly number[]) => Object.fromEntries(usedNames.map((m, k) => [m, t[k]]));
  const ones = usedNames.map((_, k) => fixed?.[k] ?? 1);
  const predictedOnes = rowFor(model, opt, ones).tokensPerSec;
  let inForce: TraceThresholds['inForce'] = null;
  if (config) {
    const t = usedNames.map((m) => config.thresholds[m] ?? 1);
    const feasible = t.reduce((s, x) => s + x - 1, 0) < N && t.every((x, k) => x <= input.maxBatch[k]);
    if (feasible) inForce = { thresholds: named(t), predicted: rowFor(model, opt, t).tokensPerSec };
  }
  const gain = opt.predicted / predictedOnes - 1;
  return {
    models: usedNames,
    N,
    nSource,
    estimate: {
      P: input.P,
      C: input.C,
      latency: input.latency,
      contendedLatency: input.contendedLatency ?? input.latency,
      steps: used.map((i) => est.rows[i]),
    },
    best: named(opt.best),
    predictedBest: opt.predicted,
    predictedOnes,
    gainOverOnes: gain,
    inForce,
    wouldApply: gain > THRESHOLD_HYSTERESIS,
    table: opt.table.slice(0, 5).map((r) => ({ thresholds: named(r.thresholds), predicted_tok_s: r.tokensPerSec })),
  };
}
