// The live traffic's batches a prediction reads beside a run: what the trace still holds, and what was taken when the run started.
import type { TraceEvent } from '../../shared/trace.ts';
import type { BatchTiming } from './routingCounts.ts';

/** The batches in `events` that ended at or after `since`, less those inside the run's own span `ran` (its own, timed apart). */
export function batchesIn(events: readonly TraceEvent[], since: number, ran: { from: number; to: number } | null): BatchTiming[] {
  return events.flatMap((e) =>
    e.type === 'batch' && e.end >= since && !(ran && e.start >= ran.from && e.end <= ran.to)
      ? [{ model: e.model, size: e.requestIds.length, start: e.start, end: e.end }]
      : [],
  );
}

/**
 * The live batches a prediction reads: those the trace still holds (`recent`) and, of those taken at
 * the run's start (`before`), the ones still in the window and no longer held; in time order.
 */
export function liveWindow(before: readonly BatchTiming[], recent: readonly BatchTiming[], since: number): BatchTiming[] {
  const held = new Set(recent.map((b) => `${b.model}@${b.start}`));
  return [...before.filter((b) => b.end >= since && !held.has(`${b.model}@${b.start}`)), ...recent].sort((a, b) => a.start - b.start);
}
