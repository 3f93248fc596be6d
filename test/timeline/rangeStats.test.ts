// Range statistics (committed tokens/s, handoffs/s, mean batch size, idle time) on hand-computed cases.
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { rangeStats, unionLength } from '../../designer/src/timeline/rangeStats.ts';
import { hitBatch } from '../../designer/src/timeline/hitTest.ts';
import { computeLayout } from '../../designer/src/timeline/layout.ts';
import { parseTrace } from '../../shared/timeline/parseTrace.ts';
import { timeToX, zoomAt, panBy, xToTime } from '../../designer/src/timeline/viewport.ts';
import type { TraceEvent } from '../../shared/trace.ts';

const events: TraceEvent[] = [
  { type: 'batch', model: 'A', batchId: 1, requestIds: ['r1', 'r2', 'r3', 'r4'], phase: 'prefill', tokens: 40, start: 0, end: 10 },
  { type: 'handoff', t: 10, requestId: 'r1', from: 'A', to: 'B', batchId: 1, tokens: 10, kept: false },
  { type: 'batch', model: 'B', batchId: 2, requestIds: ['r1', 'x', 'y'], phase: 'extend', tokens: 12, start: 5, end: 15 },
  { type: 'batch', model: 'A', batchId: 3, requestIds: ['r2', 'r3'], phase: 'decode', tokens: 2, start: 10, end: 20 },
  { type: 'handoff', t: 15, requestId: 'r1', from: 'B', to: 'A', batchId: 2, tokens: 1, kept: true },
  { type: 'batch', model: 'A', batchId: 4, requestIds: ['r1', 'r2'], phase: 'decode', tokens: 2, start: 30, end: 40 },
];

describe('rangeStats', () => {
  const store = new EventStore();
  store.addMany(events);

  it('whole range [0, 40)', () => {
    const s = rangeStats(store, 0, 40);
    const a = s.models.find((m) => m.model === 'A')!;
    const b = s.models.find((m) => m.model === 'B')!;
    expect(a.batches).toBe(3);
    expect(a.meanBatchSize).toBeCloseTo(8 / 3);
    expect(a.busyMs).toBe(30);
    expect(a.idleMs).toBe(10);
    expect(b.batches).toBe(1);
    expect(b.busyMs).toBe(10);
    expect(b.idleFrac).toBeCloseTo(0.75);
    // Batch ending at 40 is outside [0, 40): sampled = 4 + 3 + 2.
    expect(s.sampled).toBe(9);
    expect(s.discarded).toBe(1);
    expect(s.committed).toBe(8);
    expect(s.committedPerSec).toBeCloseTo(200);
    expect(s.handoffs).toBe(2);
    expect(s.handoffsPerSec).toBeCloseTo(50);
  });

  it('a partial range clips busy time and only counts what happened inside', () => {
    const s = rangeStats(store, 12, 32);
    const a = s.models.find((m) => m.model === 'A')!;
    const b = s.models.find((m) => m.model === 'B')!;
    expect(a.busyMs).toBeCloseTo(8 + 2);
    expect(a.idleMs).toBeCloseTo(10);
    expect(a.batches).toBe(1); // only batch 4 starts inside
    expect(b.busyMs).toBeCloseTo(3);
    expect(s.handoffs).toBe(1);
    expect(s.discarded).toBe(0);
    expect(s.sampled).toBe(3 + 2);
  });

  it('unionLength counts overlaps once', () => {
    expect(unionLength([0, 10, 5, 15, 20, 25])).toBe(20);
    expect(unionLength([])).toBe(0);
  });
});

describe('hit testing and viewport', () => {
  it('finds the batch under the pointer and nothing in a gap', () => {
    const store = new EventStore();
    store.addMany(events);
    const layout = computeLayout(store.lanes, 1200, 600);
    const v = { t0: 0, t1: 50, x0: layout.plotX0, width: layout.plotWidth };
    const laneA = layout.lanes[0];
    const y = laneA.batchTop + laneA.batchH / 2;
    const p = hitBatch(store, layout, v, timeToX(v, 35), y);
    expect(store.batches.cols.batchId[p]).toBe(4);
    expect(hitBatch(store, layout, v, timeToX(v, 25), y)).toBe(-1);
    expect(hitBatch(store, layout, v, timeToX(v, 35), laneA.queueTop + laneA.queueH + 30)).toBe(-1);
  });

  it('zoom keeps the time under the cursor fixed; pan moves by pixels', () => {
    const v = { t0: 0, t1: 100, x0: 100, width: 1000 };
    const z = zoomAt(v, 600, 0.5);
    expect(xToTime(z, 600)).toBeCloseTo(50);
    expect(z.t1 - z.t0).toBeCloseTo(50);
    const p = panBy(v, 100);
    expect(p.t0).toBeCloseTo(-10);
  });
});

describe('parseTrace', () => {
  it('reads JSON lines and arrays, skips invalid events, replays in emission order', () => {
    const lines =
      events
        .map((e) => JSON.stringify(e))
        .reverse()
        .join('\n') + '\n{"type":"batch"}\nnot json\n';
    const a = parseTrace(lines);
    expect(a.events.length).toBe(events.length);
    expect(a.invalid).toBe(2);
    expect(a.firstError).toBeTruthy();
    const times = a.events.map((e) => (e.type === 'batch' ? e.end : e.t));
    expect(times).toEqual([...times].sort((x, y) => x - y));
    const b = parseTrace(JSON.stringify(events));
    expect(b.events).toEqual(events.slice().sort((x, y) => (x.type === 'batch' ? x.end : x.t) - (y.type === 'batch' ? y.end : y.t)));
    expect(b.invalid).toBe(0);
  });
});
