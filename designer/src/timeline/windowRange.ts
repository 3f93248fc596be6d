// Logical index ranges of a store's rings that can hold events visible in [t0, t1] (binary search on running maxima).
import type { EventStore } from './eventStore.ts';

/**
 * Batches that may overlap [t0, t1]: [i0, i1). Callers still filter by start/end.
 * Sound for unordered input because of the running max of `end` and the measured disorder:
 * any later batch j ends at >= maxEnd - disorder and starts at >= end - maxBatchMs.
 */
export function batchRange(store: EventStore, t0: number, t1: number): [number, number] {
  const b = store.batches;
  const i0 = b.lowerBound('maxEnd', t0);
  const i1 = b.lowerBound('maxEnd', t1 + store.batchDisorderMs + store.maxBatchMs + 1e-9);
  return [i0, Math.min(b.length, i1 + 1)];
}

type PointRing = EventStore['handoffs'] | EventStore['queues'] | EventStore['states'];

/** Point events (handoffs, queues, states) with t possibly in [t0, t1]: [i0, i1). */
export function pointRange(store: EventStore, ring: PointRing, t0: number, t1: number): [number, number] {
  const i0 = (ring as EventStore['queues']).lowerBound('maxT', t0);
  const i1 = (ring as EventStore['queues']).lowerBound('maxT', t1 + store.pointDisorderMs + 1e-9);
  return [i0, Math.min(ring.length, i1 + 1)];
}
