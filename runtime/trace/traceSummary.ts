// Summaries of a recorded trace that the offline commands (optimize, simulate --replay) share.
import type { TraceEvent } from '../../shared/trace.ts';

/** Models that ran a batch, in the order of their first batch. */
export function traceModels(events: readonly TraceEvent[]): string[] {
  const models: string[] = [];
  for (const e of events) if (e.type === 'batch' && !models.includes(e.model)) models.push(e.model);
  return models;
}

/** Mean requests in flight over the span the finished requests cover: Σ (end − admitted) / span. */
export function meanInFlight(events: readonly TraceEvent[]): number | null {
  let busy = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const e of events) {
    if (e.type !== 'request-end') continue;
    busy += e.t - e.admittedAt;
    lo = Math.min(lo, e.admittedAt);
    hi = Math.max(hi, e.t);
  }
  return hi > lo ? busy / (hi - lo) : null;
}
