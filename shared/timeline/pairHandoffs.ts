// Pairs every handoff with the batch that sent it and the batch that next ran the request on the receiving model.
import type { TraceEventOf } from '../trace.ts';

type Batch = TraceEventOf<'batch'>;
type Handoff = TraceEventOf<'handoff'>;

/** Slack for clocks that stamp the handoff a hair after the receiver already started (float rounding). */
export const HANDOFF_EPSILON_MS = 1e-6;

/**
 * The receiving batch is the first batch on `to` that contains the request and starts no earlier
 * than the handoff itself: the peer cannot run work it has not received yet.
 */
export function isReceivingBatch(h: { t: number }, batchStart: number): boolean {
  return batchStart >= h.t - HANDOFF_EPSILON_MS;
}

export interface HandoffPair {
  handoff: Handoff;
  /** Index into the batch list given, or -1 when that batch is not in it. */
  from: number;
  to: number;
}

/** Batch pairing over a whole list (export, tests). The live store pairs incrementally with the same rule. */
export function pairHandoffs(batches: readonly Batch[], handoffs: readonly Handoff[]): HandoffPair[] {
  const byKey = new Map<string, number>();
  // Per (model, request): batch indices sorted by start, for the "next batch on `to`" search.
  const runs = new Map<string, number[]>();
  batches.forEach((b, i) => {
    byKey.set(`${b.model}\u0000${b.batchId}`, i);
    for (const r of b.requestIds) {
      const k = `${b.model}\u0000${r}`;
      let list = runs.get(k);
      if (!list) runs.set(k, (list = []));
      list.push(i);
    }
  });
  for (const list of runs.values()) list.sort((a, b) => batches[a].start - batches[b].start);
  return handoffs.map((h) => {
    const from = byKey.get(`${h.from}\u0000${h.batchId}`) ?? -1;
    const list = runs.get(`${h.to}\u0000${h.requestId}`);
    let to = -1;
    if (list) {
      // Binary search: first batch of this request on `to` starting at or after the handoff.
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (isReceivingBatch(h, batches[list[mid]].start)) hi = mid;
        else lo = mid + 1;
      }
      if (lo < list.length) to = list[lo];
    }
    return { handoff: h, from, to };
  });
}
