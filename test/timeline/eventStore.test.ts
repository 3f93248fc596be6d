// Event store: handoff arrows paired to the right batches, bounded memory under a cap, window queries, round trip.
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { toEvents } from '../../designer/src/timeline/toEvents.ts';
import { batchRange, pointRange } from '../../designer/src/timeline/windowRange.ts';
import { requestPath } from '../../designer/src/timeline/requestPath.ts';
import { mulberry32 } from '../../shared/rng.ts';
import { generateTrace } from '../../shared/timeline/generateTrace.ts';
import { pairHandoffs } from '../../shared/timeline/pairHandoffs.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';

const trace = generateTrace({ algorithm: 'r2r', requests: 60, concurrency: 12, maxTokens: 32, seed: 11 });
const batchesOf = (ev: TraceEvent[]) => ev.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
const handoffsOf = (ev: TraceEvent[]) => ev.filter((e): e is TraceEventOf<'handoff'> => e.type === 'handoff');

/** Arrow endpoints as the store sees them: (sending batch id, receiving batch id or null) per handoff. */
function storeArrows(store: EventStore): Map<string, [number | null, number | null]> {
  const out = new Map<string, [number | null, number | null]>();
  const h = store.handoffs;
  for (let i = 0; i < h.length; i++) {
    const p = h.phys(i);
    const from = store.batches.physOfAbs(h.cols.fromAbs[p]);
    const to = store.batches.physOfAbs(h.cols.toAbs[p]);
    out.set(`${store.requestName(h.cols.req[p])}@${h.cols.t[p]}`, [
      from < 0 ? null : store.batches.cols.batchId[from],
      to < 0 ? null : store.batches.cols.batchId[to],
    ]);
  }
  return out;
}

function expectedArrows(ev: TraceEvent[]): Map<string, [number | null, number | null]> {
  const b = batchesOf(ev);
  return new Map(
    pairHandoffs(b, handoffsOf(ev)).map(({ handoff: h, from, to }) => [
      `${h.requestId}@${h.t}`,
      [from < 0 ? null : b[from].batchId, to < 0 ? null : b[to].batchId],
    ]),
  );
}

describe('EventStore arrow pairing', () => {
  it('pairs each handoff with its sending batch and the next batch of the request on the receiver', () => {
    const store = new EventStore();
    store.addMany(trace);
    const got = storeArrows(store);
    const want = expectedArrows(trace);
    expect(got.size).toBe(handoffsOf(trace).length);
    expect([...got.values()].filter(([, to]) => to !== null).length).toBeGreaterThan(got.size * 0.9);
    expect(got).toEqual(want);
    // And the sending batch really is on `from` with handoff.batchId, the receiving one on `to` holding the request.
    const h = store.handoffs;
    for (let i = 0; i < h.length; i++) {
      const p = h.phys(i);
      const fp = store.batches.physOfAbs(h.cols.fromAbs[p]);
      expect(store.batches.cols.lane[fp]).toBe(h.cols.from[p]);
      const tp = store.batches.physOfAbs(h.cols.toAbs[p]);
      if (tp >= 0) {
        expect(store.batches.cols.lane[tp]).toBe(h.cols.to[p]);
        expect(store.batchHas(tp, h.cols.req[p])).toBe(true);
        expect(store.batches.cols.start[tp]).toBeGreaterThanOrEqual(h.cols.t[p]);
      }
    }
  });

  it('pairs the same when events arrive out of order (handoff before its batch, receiver before the handoff)', () => {
    const rnd = mulberry32(5);
    // Local shuffles within windows of 8 events: what merging several sub-servers' streams can do.
    const shuffled = trace.slice();
    for (let i = 0; i + 8 <= shuffled.length; i += 8) {
      for (let k = 7; k > 0; k--) {
        const j = Math.floor(rnd() * (k + 1));
        [shuffled[i + k], shuffled[i + j]] = [shuffled[i + j], shuffled[i + k]];
      }
    }
    // Also move some handoffs after the receiving batch.
    const late = shuffled.slice();
    for (let i = 0, moved = 0; i < late.length && moved < 30; i++) {
      if (late[i].type !== 'handoff') continue;
      const [h] = late.splice(i, 1);
      late.splice(Math.min(late.length, i + 40), 0, h);
      moved++;
      i += 40;
    }
    for (const ev of [shuffled, late]) {
      const store = new EventStore();
      store.addMany(ev);
      expect(storeArrows(store)).toEqual(expectedArrows(trace));
    }
  });

  it('does not pair with a batch of the request that ran before the handoff', () => {
    const store = new EventStore();
    store.addMany([
      { type: 'batch', model: 'L', batchId: 1, requestIds: ['r'], phase: 'prefill', tokens: 8, start: 0, end: 5 },
      { type: 'batch', model: 'S', batchId: 2, requestIds: ['r'], phase: 'decode', tokens: 1, start: 5, end: 6 },
      { type: 'handoff', t: 6, requestId: 'r', from: 'S', to: 'L', batchId: 2, tokens: 1, kept: false },
      { type: 'batch', model: 'L', batchId: 3, requestIds: ['x'], phase: 'decode', tokens: 1, start: 6, end: 8 },
      { type: 'batch', model: 'L', batchId: 4, requestIds: ['x', 'r'], phase: 'extend', tokens: 2, start: 8, end: 10 },
    ]);
    expect(storeArrows(store).get('r@6')).toEqual([2, 4]);
  });
});

describe('EventStore bounds', () => {
  it('keeps memory bounded under a cap over a long feed (an hour at 5k events/s, scaled)', () => {
    const cap = 20_000;
    const store = new EventStore({ capacity: cap, maxRequests: 2_000 });
    let t0 = 0;
    let fed = 0;
    let peakBytes = 0;
    let seed = 1;
    const samples: number[] = [];
    while (fed < 600_000) {
      const chunk = generateTrace({ algorithm: seed % 2 ? 'r2r' : 'me', requests: 80, concurrency: 16, maxTokens: 32, seed: seed++, t0 });
      // Fresh request ids per chunk, like a long-running server.
      for (const e of chunk) {
        const ev =
          'requestId' in e
            ? { ...e, requestId: `${seed}-${e.requestId}` }
            : e.type === 'batch'
              ? { ...e, requestIds: e.requestIds.map((r) => `${seed}-${r}`) }
              : e;
        store.add(ev as TraceEvent);
      }
      fed += chunk.length;
      const last = chunk[chunk.length - 1];
      t0 = (last.type === 'batch' ? last.end : last.t) + 10;
      const fp = store.footprint();
      peakBytes = Math.max(peakBytes, fp.bytes);
      samples.push(fp.bytes);
      expect(fp.events).toBeLessThanOrEqual(cap);
      expect(fp.requests).toBeLessThanOrEqual(2_000);
      expect(fp.pending).toBeLessThan(cap);
      expect(fp.batchKeys).toBeLessThanOrEqual(store.batches.length);
    }
    expect(store.size).toBe(cap);
    const total = Object.values(store.evicted).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(fed - cap - 5_000);
    // Bytes stop growing once the rings reached their cap: the second half never exceeds the first half's peak.
    const half = samples.slice(0, samples.length >> 1);
    expect(Math.max(...samples.slice(samples.length >> 1))).toBeLessThanOrEqual(Math.max(...half));
    expect(peakBytes).toBeLessThan(16 * 1024 * 1024);
    // The newest events are the ones kept.
    expect(store.latestT).toBeGreaterThan(t0 - 1000);
    expect(store.oldestRetainedT()).toBeGreaterThan(t0 * 0.5);
  });

  it('bounds the output token ids kept from request-end events', () => {
    const store = new EventStore({ maxEndTokens: 10_000 });
    for (let i = 0; i < 100; i++) {
      store.add({
        type: 'request-end',
        t: i,
        requestId: `r${i}`,
        status: 'done',
        tokens: new Array(1000).fill(7),
        runs: [{ model: 'a', count: 1000 }],
        handoffs: 0,
        admittedAt: i - 1,
        firstTokenAt: i - 0.5,
      });
    }
    expect(store.table.endTokens).toBeLessThanOrEqual(10_000);
    expect(store.footprint().endTokens).toBe([...store.requests.values()].reduce((a, r) => a + (r.end?.tokens.length ?? 0), 0));
    const newest = store.requests.get(store.requestIndex('r99'))!;
    const oldest = store.requests.get(store.requestIndex('r0'))!;
    expect(newest.end!.tokens.length).toBe(1000);
    expect(oldest.end!.tokens.length).toBe(0);
    expect(oldest.tokensDropped).toBe(1000);
    expect(oldest.end!.runs[0].count).toBe(1000);
  });

  it('drops the globally oldest events first', () => {
    const store = new EventStore({ capacity: 10 });
    for (let i = 0; i < 30; i++) store.add({ type: 'queue', t: i, model: i % 2 ? 'a' : 'b', length: i });
    expect(store.size).toBe(10);
    expect(store.queues.cols.t[store.queues.phys(0)]).toBe(20);
    expect(store.evicted.queue).toBe(20);
  });
});

describe('window queries', () => {
  it('batchRange / pointRange never miss a visible event, even with out-of-order input', () => {
    const rnd = mulberry32(9);
    const store = new EventStore();
    const ev: TraceEvent[] = [];
    for (let i = 0; i < 3000; i++) {
      const start = i * 2 + rnd() * 30 - 15;
      ev.push({ type: 'batch', model: `m${i % 3}`, batchId: i, requestIds: ['r'], phase: 'decode', tokens: 1, start, end: start + rnd() * 12 });
      ev.push({ type: 'queue', t: i * 2 + rnd() * 20 - 10, model: 'm0', length: i });
    }
    store.addMany(ev);
    for (let k = 0; k < 200; k++) {
      const t0 = rnd() * 6000;
      const t1 = t0 + rnd() * 300;
      const [i0, i1] = batchRange(store, t0, t1);
      const b = store.batches;
      let inRange = 0;
      for (let i = i0; i < i1; i++) {
        const p = b.phys(i);
        if (b.cols.end[p] >= t0 && b.cols.start[p] <= t1) inRange++;
      }
      let all = 0;
      for (let i = 0; i < b.length; i++) {
        const p = b.phys(i);
        if (b.cols.end[p] >= t0 && b.cols.start[p] <= t1) all++;
      }
      expect(inRange).toBe(all);
      expect(i1 - i0).toBeLessThan(b.length);
      const q = store.queues;
      const [q0, q1] = pointRange(store, q, t0, t1);
      let qin = 0;
      let qall = 0;
      for (let i = q0; i < q1; i++) {
        const t = q.cols.t[q.phys(i)];
        if (t >= t0 && t <= t1) qin++;
      }
      for (let i = 0; i < q.length; i++) {
        const t = q.cols.t[q.phys(i)];
        if (t >= t0 && t <= t1) qall++;
      }
      expect(qin).toBe(qall);
    }
  });
});

describe('round trip and request paths', () => {
  it('toEvents gives back every event fed (under the cap)', () => {
    const store = new EventStore();
    store.addMany(trace);
    const back = toEvents(store);
    const norm = (ev: TraceEvent[]) => ev.map((e) => JSON.stringify(e)).sort();
    expect(norm(back)).toEqual(norm(trace));
  });

  it('keeps the lookahead passes and rows of a batch (traces from before lookahead was removed)', () => {
    const withAhead = trace.map((e, i) => (e.type === 'batch' && i % 3 === 0 ? { ...e, steps: 1 + (i % 5) + 1, aheadRows: i % 7 } : e));
    const store = new EventStore();
    store.addMany(withAhead);
    const norm = (ev: TraceEvent[]) => ev.map((e) => JSON.stringify(e)).sort();
    expect(norm(toEvents(store))).toEqual(norm(withAhead));
  });

  it('requestPath finds exactly the batches and handoffs of a request, incrementally too', () => {
    const store = new EventStore();
    const half = trace.length >> 1;
    store.addMany(trace.slice(0, half));
    const id = 'req-00003';
    const idx = store.requestIndex(id);
    const partial = requestPath(store, idx);
    store.addMany(trace.slice(half));
    const inc = requestPath(store, idx, partial);
    const full = requestPath(store, idx);
    expect(inc.batches).toEqual(full.batches);
    expect(inc.handoffs).toEqual(full.handoffs);
    expect(inc.states).toEqual(full.states);
    const wantBatches = batchesOf(trace)
      .filter((b) => b.requestIds.includes(id))
      .map((b) => b.batchId);
    expect(full.batches.map((a) => store.batches.cols.batchId[store.batches.physOfAbs(a)])).toEqual(wantBatches);
    expect(full.handoffs.length).toBe(handoffsOf(trace).filter((h) => h.requestId === id).length);
    expect(full.states.map((s) => s.state)).toContain('done');
  });
});

describe('config events (issue 53 item 13)', () => {
  const cfg = (t: number, large: number): TraceEventOf<'config'> => ({
    type: 'config',
    t,
    mode: 'async',
    retainState: true,
    thresholds: { small: 1, large },
    maxWaitMs: 20,
    lookahead: 0,
  });
  it('the same values said again (a reader started tracing) are no change; new values are', () => {
    const store = new EventStore();
    store.addMany([cfg(0, 4), cfg(100, 4), cfg(200, 4)]);
    expect(store.configs.map((c) => c.t)).toEqual([0]);
    store.addMany([cfg(300, 2), cfg(400, 2), cfg(500, 4)]);
    expect(store.configs.map((c) => [c.t, c.thresholds.large])).toEqual([
      [0, 4],
      [300, 2],
      [500, 4],
    ]);
    // arriving late, before an identical one: the earlier time stands for it
    store.add(cfg(250, 2));
    expect(store.configs.map((c) => c.t)).toEqual([0, 250, 500]);
  });
});
