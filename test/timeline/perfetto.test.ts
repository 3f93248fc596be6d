// toChromeTrace against the Trace Event Format: fields, µs units, flow pairing, track non-overlap, process names.
import { describe, expect, it } from 'vitest';
import { assignTracks, toChromeTrace, type ChromeTrace } from '../../shared/perfetto.ts';
import { generateTrace } from '../../shared/timeline/generateTrace.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import { checkChromeTrace, enclosingSlice } from './checkChromeTrace.ts';

const r2r = generateTrace({ algorithm: 'r2r', requests: 40, concurrency: 8, maxTokens: 24, seed: 7 });
const me = generateTrace({ algorithm: 'me', requests: 30, concurrency: 6, maxTokens: 16, seed: 3 });

describe('checkChromeTrace (the checker itself can fail)', () => {
  const base = (): ChromeTrace => ({
    displayTimeUnit: 'ms',
    traceEvents: [
      { name: 'process_name', ph: 'M', pid: 2, tid: 0, ts: 0, args: { name: 'm' } },
      { name: 'a', ph: 'X', pid: 2, tid: 1, ts: 0, dur: 10 },
      { name: 'b', ph: 'X', pid: 2, tid: 1, ts: 20, dur: 10 },
      { name: 'h', ph: 's', id: 1, pid: 2, tid: 1, ts: 5 },
      { name: 'h', ph: 'f', bp: 'e', id: 1, pid: 2, tid: 1, ts: 25 },
    ],
  });
  it('accepts a well-formed trace', () => expect(checkChromeTrace(base())).toEqual([]));
  it('rejects overlapping slices on one track', () => {
    const t = base();
    t.traceEvents[2].ts = 5;
    expect(checkChromeTrace(t).join()).toMatch(/overlaps/);
  });
  it('accepts nesting', () => {
    const t = base();
    t.traceEvents.push({ name: 'c', ph: 'X', pid: 2, tid: 1, ts: 2, dur: 3 });
    expect(checkChromeTrace(t)).toEqual([]);
  });
  it('rejects an unpaired flow, a missing dur, a pid without name, a finish without bp', () => {
    const t = base();
    t.traceEvents.push({ name: 'h', ph: 's', id: 2, pid: 2, tid: 1, ts: 6 });
    t.traceEvents.push({ name: 'x', ph: 'X', pid: 3, tid: 1, ts: 0 });
    delete t.traceEvents[4].bp;
    const p = checkChromeTrace(t).join('\n');
    expect(p).toMatch(/flow 2: 1 s and 0 f/);
    expect(p).toMatch(/lacks a non-negative dur/);
    expect(p).toMatch(/pid 3 has no process_name/);
    expect(p).toMatch(/without bp/);
  });
});

describe('toChromeTrace', () => {
  for (const [name, events] of [
    ['r2r', r2r],
    ['me (3 models)', me],
  ] as const) {
    it(`${name}: well formed, one named pid per model`, () => {
      const trace = toChromeTrace(events);
      expect(checkChromeTrace(trace)).toEqual([]);
      expect(trace.displayTimeUnit).toBe('ms');
      const models = [...new Set(events.filter((e) => e.type === 'batch').map((e) => (e as TraceEventOf<'batch'>).model))];
      const names = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => e.args!.name);
      for (const m of models) expect(names).toContain(m);
      const pidsByModel = new Map(trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => [e.args!.name as string, e.pid]));
      expect(new Set(models.map((m) => pidsByModel.get(m))).size).toBe(models.length);
    });

    it(`${name}: one X slice per batch, in microseconds`, () => {
      const trace = toChromeTrace(events);
      const batches = events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
      const slices = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat?.startsWith('batch'));
      expect(slices.length).toBe(batches.length);
      const byId = new Map(slices.map((s) => [s.args!.batchId as number, s]));
      for (const b of batches) {
        const s = byId.get(b.batchId)!;
        expect(Math.abs(s.ts - b.start * 1000)).toBeLessThanOrEqual(0.5);
        expect(Math.abs(s.dur! - (b.end - b.start) * 1000)).toBeLessThanOrEqual(1);
        expect(s.args!.size).toBe(b.requestIds.length);
      }
    });

    it(`${name}: every handoff is a flow from the sending batch to the next batch of that request on the receiver`, () => {
      const trace = toChromeTrace(events);
      const handoffs = events.filter((e): e is TraceEventOf<'handoff'> => e.type === 'handoff');
      const batches = events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
      const starts = trace.traceEvents.filter((e) => e.ph === 's');
      const finishes = new Map(trace.traceEvents.filter((e) => e.ph === 'f').map((e) => [e.id, e]));
      // Every handoff whose request ran again is paired; the ones that end the trace in flight are instants.
      const unpaired = trace.traceEvents.filter((e) => e.ph === 'i' && e.cat === 'handoff').length;
      expect(starts.length + unpaired).toBe(handoffs.length);
      expect(starts.length).toBeGreaterThan(handoffs.length * 0.9);
      for (const s of starts) {
        const f = finishes.get(s.id)!;
        const from = enclosingSlice(trace, s)!;
        const to = enclosingSlice(trace, f)!;
        const h = handoffs.find((x) => x.requestId === s.args!.requestId && x.batchId === from.args!.batchId)!;
        expect(h, 'sending slice is the handoff batch').toBeDefined();
        // Independent check of "next batch on `to` holding the request".
        const next = batches.filter((b) => b.model === h.to && b.requestIds.includes(h.requestId) && b.start >= h.t).sort((a, b) => a.start - b.start)[0];
        expect(to.args!.batchId).toBe(next.batchId);
      }
    });
  }

  it('moves overlapping batches of one model to separate tracks', () => {
    const ev: TraceEvent[] = [
      { type: 'batch', model: 'm', batchId: 1, requestIds: ['a'], phase: 'decode', tokens: 1, start: 0, end: 10 },
      { type: 'batch', model: 'm', batchId: 2, requestIds: ['b'], phase: 'decode', tokens: 1, start: 5, end: 15 },
      { type: 'batch', model: 'm', batchId: 3, requestIds: ['c'], phase: 'decode', tokens: 1, start: 10, end: 20 },
    ];
    const trace = toChromeTrace(ev);
    expect(checkChromeTrace(trace)).toEqual([]);
    const tids = trace.traceEvents.filter((e) => e.ph === 'X').map((e) => e.tid);
    expect(tids).toEqual([1, 2, 1]);
  });

  it('assignTracks never puts overlapping intervals on one track', () => {
    const iv = Array.from({ length: 500 }, (_, i) => ({ startUs: (i * 37) % 1000, endUs: ((i * 37) % 1000) + 1 + (i % 50) }));
    const tr = assignTracks(iv);
    for (let i = 0; i < iv.length; i++)
      for (let j = i + 1; j < iv.length; j++) if (tr[i] === tr[j]) expect(iv[i].endUs <= iv[j].startUs || iv[j].endUs <= iv[i].startUs).toBe(true);
  });

  it('survives a JSON round trip (what Perfetto reads)', () => {
    const trace = JSON.parse(JSON.stringify(toChromeTrace(r2r))) as ChromeTrace;
    expect(checkChromeTrace(trace)).toEqual([]);
  });
});
