// The live feed's message handling at the edge: envelopes and events validated, bad events skipped and counted.
import { describe, expect, it } from 'vitest';
import { createMessageHandler, liveUrl, type FeedHandlers, type LiveStats } from '../../designer/src/timeline/feedMessages.ts';
import type { TraceEvent } from '../../shared/trace.ts';

function recorder() {
  const log: { kind: string; data: unknown }[] = [];
  const h: FeedHandlers = {
    onSnapshot: (events: TraceEvent[], now: number) => log.push({ kind: 'snapshot', data: { events, now } }),
    onEvents: (events: TraceEvent[]) => log.push({ kind: 'events', data: events }),
    onStats: (s: LiveStats) => log.push({ kind: 'stats', data: s }),
    onDropped: (n: number) => log.push({ kind: 'dropped', data: n }),
    onStatus: (s, d) => log.push({ kind: 'status', data: [s, d] }),
    onInvalid: (n, first) => log.push({ kind: 'invalid', data: [n, first] }),
  };
  return { log, handle: createMessageHandler(h) };
}

const q = { type: 'queue', t: 1, model: 'small', length: 2 };

describe('feed messages', () => {
  it('passes valid snapshot, events, stats, dropped and error messages through', () => {
    const { log, handle } = recorder();
    handle(JSON.stringify({ type: 'snapshot', events: [q], now: 5 }));
    handle(JSON.stringify({ type: 'events', events: [q, { ...q, t: 2 }] }));
    handle(JSON.stringify({ type: 'stats', now: 6, models: [{ name: 'small', running: 1, waiting: 0, pendingReturn: 2, kvBytes: 10, threshold: 1 }] }));
    handle(JSON.stringify({ type: 'dropped', count: 7 }));
    handle(JSON.stringify({ type: 'error', message: 'nope' }));
    expect(log.map((l) => l.kind)).toEqual(['snapshot', 'events', 'stats', 'dropped', 'status']);
    expect((log[0].data as { now: number }).now).toBe(5);
    expect((log[1].data as TraceEvent[]).length).toBe(2);
    expect((log[2].data as LiveStats).models[0].pendingReturn).toBe(2);
    expect(log[3].data).toBe(7);
    expect(log[4].data).toEqual(['error', 'nope']);
  });

  it('skips invalid events but keeps the rest of the batch', () => {
    const { log, handle } = recorder();
    handle(JSON.stringify({ type: 'events', events: [q, { type: 'queue', t: 'soon', model: 'x', length: 1 }, { type: 'mystery' }] }));
    const events = log.find((l) => l.kind === 'events')!.data as TraceEvent[];
    expect(events).toEqual([q]);
    const inv = log.find((l) => l.kind === 'invalid')!.data as [number, string];
    expect(inv[0]).toBe(2);
    expect(inv[1]).toMatch(/t/);
  });

  it('rejects garbage and unknown envelopes without throwing', () => {
    const { log, handle } = recorder();
    handle('not json');
    handle(JSON.stringify({ type: 'events' }));
    handle(JSON.stringify({ type: 'hello' }));
    expect(log.map((l) => l.kind)).toEqual(['invalid', 'invalid', 'invalid']);
  });

  it('builds the /live URL with the admin token', () => {
    expect(liveUrl({ protocol: 'http:', host: 'h:1' }, null)).toBe('ws://h:1/live');
    expect(liveUrl({ protocol: 'https:', host: 'h' }, 'a b')).toBe('wss://h/live?token=a%20b');
  });
});
