// The store's retained events back as trace events: one batch or handoff (panels), or all of a time window in emission order (export).
import { PHASES, type TraceEvent, type TraceEventOf } from '../../../shared/trace.ts';
import { STATE_NAMES, type EventStore } from './eventStore.ts';

/** Rebuilds the batch event at physical index p. */
export function batchEvent(store: EventStore, p: number): TraceEventOf<'batch'> {
  const c = store.batches.cols;
  return {
    type: 'batch',
    model: store.lanes[c.lane[p]],
    batchId: c.batchId[p],
    requestIds: store.batchMembers(p).map((i) => store.requestName(i)),
    phase: PHASES[c.phase[p]],
    tokens: c.tokens[p],
    start: c.start[p],
    end: c.end[p],
    ...(c.steps[p] > 1 ? { steps: c.steps[p], aheadRows: c.aheadRows[p] } : {}),
    ...(c.cached[p] > 0 ? { cachedTokens: c.cached[p] } : {}),
    ...(c.masked[p] > 0 ? { maskedRows: c.masked[p] } : {}),
  };
}

/** Rebuilds the handoff event at physical index p. */
export function handoffEvent(store: EventStore, p: number): TraceEventOf<'handoff'> {
  const c = store.handoffs.cols;
  return {
    type: 'handoff',
    t: c.t[p],
    requestId: store.requestName(c.req[p]),
    from: store.lanes[c.from[p]],
    to: store.lanes[c.to[p]],
    batchId: c.batchId[p],
    tokens: c.tokens[p],
    kept: c.kept[p] === 1,
  };
}

/**
 * Retained events as trace events in emission order, optionally limited to [t0, t1]
 * (batches overlapping it; the config in force at t0 is included so the export says what ran).
 */
export function toEvents(store: EventStore, t0 = -Infinity, t1 = Infinity): TraceEvent[] {
  const keyed: { k: number; e: TraceEvent }[] = [];
  const { batches: b, handoffs: h, queues: q, states: s, lanes } = store;
  for (let i = 0; i < b.length; i++) {
    const p = b.phys(i);
    if (b.cols.end[p] >= t0 && b.cols.start[p] <= t1) keyed.push({ k: b.cols.end[p], e: batchEvent(store, p) });
  }
  for (let i = 0; i < h.length; i++) {
    const p = h.phys(i);
    if (h.cols.t[p] >= t0 && h.cols.t[p] <= t1) keyed.push({ k: h.cols.t[p], e: handoffEvent(store, p) });
  }
  for (let i = 0; i < q.length; i++) {
    const p = q.phys(i);
    const t = q.cols.t[p];
    if (t >= t0 && t <= t1) keyed.push({ k: t, e: { type: 'queue', t, model: lanes[q.cols.lane[p]], length: q.cols.length[p] } });
  }
  for (let i = 0; i < s.length; i++) {
    const p = s.phys(i);
    const t = s.cols.t[p];
    if (t < t0 || t > t1) continue;
    const lane = s.cols.lane[p];
    keyed.push({
      k: t,
      e: { type: 'request-state', t, requestId: store.requestName(s.cols.req[p]), model: lane < 0 ? null : lanes[lane], state: STATE_NAMES[s.cols.state[p]] },
    });
  }
  for (const info of store.requests.values()) if (info.end && info.end.t >= t0 && info.end.t <= t1) keyed.push({ k: info.end.t, e: info.end });
  const inForce = Number.isFinite(t0) ? store.configAt(t0) : undefined;
  for (const c of store.configs) if ((c.t >= t0 && c.t <= t1) || c === inForce) keyed.push({ k: c.t, e: c });
  // Stable sort: equal times keep kind order (batch before its handoffs, as the runtime emits them).
  keyed.sort((a, b2) => a.k - b2.k);
  return keyed.map((x) => x.e);
}
