// A request's time on no model: entry to first engine, hand-offs beyond the batch the target was running, last batch to the end.
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { TransitTimes } from '../../runtime/eval/transitTimes.ts';

const batch = (model: string, ids: string[], start: number, end: number): TraceEvent => ({
  type: 'batch',
  model,
  batchId: start,
  requestIds: ids,
  phase: 'decode',
  tokens: ids.length,
  start,
  end,
});
const state = (id: string, model: string | null, state: string, t: number): TraceEvent => ({ type: 'request-state', t, requestId: id, model, state });
const handoff = (id: string, from: string, to: string, t: number): TraceEvent => ({
  type: 'handoff',
  t,
  requestId: id,
  from,
  to,
  batchId: 0,
  tokens: 1,
  kept: false,
});
const end = (id: string, t: number, admittedAt: number, status: 'done' | 'cancelled' = 'done'): TraceEvent => ({
  type: 'request-end',
  t,
  requestId: id,
  status,
  tokens: [1],
  runs: [],
  handoffs: 0,
  admittedAt,
  firstTokenAt: null,
});

describe('TransitTimes', () => {
  it("adds entry → engine, each crossing beyond the target's running batch, and last batch → end", () => {
    const t = new TransitTimes((id) => id.startsWith('ev'));
    const events: TraceEvent[] = [
      state('ev-0', null, 'admitted', 0),
      state('ev-0', 'small', 'queued', 2), // 2 ms to the first engine
      batch('small', ['ev-0'], 3, 4),
      // the target's thread reported the arrival before the source's hand-off reached the trace; and its own hand-back later
      state('ev-0', 'large', 'running', 9), // large ran a batch from 1 to 7: only 9 − 7 = 2 ms count
      state('ev-0', 'large', 'pending-return', 12),
      handoff('ev-0', 'small', 'large', 4),
      batch('large', ['x'], 1, 7),
      batch('large', ['ev-0'], 9, 12),
      handoff('ev-0', 'large', 'small', 12),
      state('ev-0', 'small', 'running', 13.5), // small idle: all 1.5 ms count
      batch('small', ['ev-0'], 14, 15),
      end('ev-0', 16, 0), // 1 ms from the last batch
      // a live request and a cancelled one are not counted
      state('x', 'large', 'queued', 0),
      end('x', 20, 0),
      state('ev-1', 'small', 'queued', 1),
      batch('small', ['ev-1'], 2, 3),
      end('ev-1', 40, 0, 'cancelled'),
    ];
    for (const e of events) t.onEvent(e);
    const batches = events.flatMap((e) => (e.type === 'batch' ? [{ model: e.model, start: e.start, end: e.end }] : []));
    expect(t.meanMs(batches)).toBeCloseTo(2 + 2 + 1.5 + 1, 9);
  });

  it("counts a batch the busy target launched without the hand-off as the hand-off's time", () => {
    const t = new TransitTimes(() => true);
    const events: TraceEvent[] = [
      state('ev-0', null, 'admitted', 0),
      state('ev-0', 'small', 'queued', 0.5),
      batch('small', ['ev-0'], 1, 4),
      handoff('ev-0', 'small', 'large', 4),
      batch('large', ['x'], 1, 7),
      batch('large', ['x'], 7.1, 12), // planned before the hand-off was read at 7.3
      state('ev-0', 'large', 'queued', 7.3),
      batch('large', ['x', 'ev-0'], 12, 15),
      end('ev-0', 15, 0),
    ];
    for (const e of events) t.onEvent(e);
    const batches = events.flatMap((e) => (e.type === 'batch' ? [{ model: e.model, start: e.start, end: e.end }] : []));
    // 0.5 to the first engine, 12 − 7.1 on the crossing (the missed batch), nothing after the last batch
    expect(t.meanMs(batches)).toBeCloseTo(0.5 + 4.9, 9);
  });

  it('has no figure before a request of its own has finished', () => {
    const t = new TransitTimes(() => true);
    t.onEvent(state('ev-0', 'small', 'queued', 1));
    expect(t.meanMs([])).toBeNull();
  });
});
