// `tokenrouter optimize --slo`: the SLO-aware choice (thresholds and max-wait deadline) for a recorded trace's routing and step latency, at the offered rate it saw or one given.
import type { TraceEvent } from '../../shared/trace.ts';
import { TokenRouterError } from '../errors.ts';
import { optimiseForSlo, type LatencySlo } from './throughput/index.ts';
import type { TraceThresholds } from './thresholdsFromTrace.ts';

export interface TraceSloChoice {
  rateRps: number;
  rateSource: 'given' | 'trace';
  outputTokens: number;
  best: Record<string, number>;
  maxWaitMs: number;
  /** False: no setting meets the SLO at this rate (best is then the most goodput). */
  meetsSlo: boolean;
  goodputReqS: number;
  p99TpotMs: number;
  p99TtftMs: number;
}

/** Requests admitted per second over the trace, and the mean output of those that finished. */
function offeredLoad(events: readonly TraceEvent[]): { rateRps: number | null; outputTokens: number | null } {
  const admitted = events.flatMap((e) => (e.type === 'request-state' && e.model === null && e.state === 'admitted' ? [e.t] : []));
  const ends = events.filter((e): e is Extract<TraceEvent, { type: 'request-end' }> => e.type === 'request-end' && e.status === 'done');
  const span = admitted.length > 1 ? Math.max(...admitted) - Math.min(...admitted) : 0;
  return {
    rateRps: span > 0 ? ((admitted.length - 1) / span) * 1000 : null,
    outputTokens: ends.length > 0 ? ends.reduce((s, e) => s + e.tokens.length, 0) / ends.length : null,
  };
}

export function sloChoiceFromTrace(
  events: readonly TraceEvent[],
  r: TraceThresholds,
  slo: LatencySlo,
  opts: { rateRps?: number; fixed?: Readonly<Record<string, number>> } = {},
): TraceSloChoice {
  const load = offeredLoad(events);
  const rateRps = opts.rateRps ?? load.rateRps;
  if (rateRps === null)
    throw new TokenRouterError('invalid_request', 'the trace has too few admitted requests to estimate the arrival rate; pass --request-rate', 'request-rate');
  if (load.outputTokens === null) throw new TokenRouterError('invalid_request', 'the trace has no finished requests to estimate output length from', 'trace');
  const fixed = Object.fromEntries(r.models.flatMap((m, k) => (opts.fixed?.[m] === undefined ? [] : [[k, opts.fixed[m]]])));
  const cap = r.estimate.latency[0].length;
  const input = {
    N: r.N,
    P: r.estimate.P,
    C: r.estimate.C,
    latency: r.estimate.latency,
    contendedLatency: r.estimate.contendedLatency,
    maxBatch: r.models.map(() => Math.min(cap, r.N)),
    outputTokens: Math.max(1, Math.round(load.outputTokens)),
  };
  const choice = optimiseForSlo(input, { rateRps, requests: 400 }, slo, { fixed, replications: 3 });
  return {
    rateRps,
    rateSource: opts.rateRps === undefined ? 'trace' : 'given',
    outputTokens: input.outputTokens,
    best: Object.fromEntries(r.models.map((m, k) => [m, choice.best.thresholds[k]])),
    maxWaitMs: choice.best.maxWaitMs,
    meetsSlo: choice.meetsSlo,
    goodputReqS: choice.best.goodputReqS,
    p99TpotMs: choice.best.p99TpotMs,
    p99TtftMs: choice.best.p99TtftMs,
  };
}
