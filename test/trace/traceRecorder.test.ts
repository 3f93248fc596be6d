// The trace ring keeps the config in force: a long run's export and the live snapshot still say which mode and thresholds held.
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';

const config = (t: number, large: number): TraceEvent => ({
  type: 'config',
  t,
  mode: 'async-delayed',
  retainState: true,
  thresholds: { small: 1, large },
  maxWaitMs: 20,
  lookahead: 0,
});
const queue = (t: number): TraceEvent => ({ type: 'queue', t, model: 'small', length: t });

describe('TraceRecorder', () => {
  it('leads its window with the config in force once that config has left the window', () => {
    const r = new TraceRecorder(10);
    r.emit(config(0, 1));
    for (let t = 1; t <= 55; t++) r.emit(queue(t));
    const ev = r.events;
    expect(ev).toHaveLength(11);
    expect(ev[0]).toMatchObject({ type: 'config', thresholds: { large: 1 } });
    expect(ev.slice(1).map((e) => ('t' in e ? e.t : -1))).toEqual([46, 47, 48, 49, 50, 51, 52, 53, 54, 55]);
    expect(r.dropped).toBeGreaterThan(0);
  });

  it('a change inside the window stands where it happened; the one before it leads', () => {
    const r = new TraceRecorder(10);
    r.emit(config(0, 1));
    for (let t = 1; t <= 30; t++) r.emit(queue(t));
    r.emit(config(31, 4));
    for (let t = 32; t <= 36; t++) r.emit(queue(t));
    const ev = r.events;
    expect(ev[0]).toMatchObject({ type: 'config', thresholds: { large: 1 } });
    expect(ev.flatMap((e) => (e.type === 'config' ? [e.t] : []))).toEqual([0, 31]);
    // once the change itself has left the window, it leads instead
    for (let t = 37; t <= 80; t++) r.emit(queue(t));
    expect(r.events[0]).toMatchObject({ type: 'config', t: 31, thresholds: { large: 4 } });
    expect(r.events.filter((e) => e.type === 'config')).toHaveLength(1);
  });

  it("a shorter slice (the live feed's snapshot) is led by the config in force too", () => {
    const r = new TraceRecorder(100);
    r.emit(config(0, 3));
    for (let t = 1; t <= 50; t++) r.emit(queue(t));
    const ev = r.recent(5);
    expect(ev.map((e) => e.type)).toEqual(['config', 'queue', 'queue', 'queue', 'queue', 'queue']);
    expect(ev[0]).toMatchObject({ thresholds: { large: 3 } });
  });

  it('wraps around many times keeping the newest in order; clear empties it and keeps the config; unbounded keeps all', () => {
    const r = new TraceRecorder(7);
    r.emit(config(0, 2));
    for (let t = 1; t <= 100; t++) r.emit(queue(t));
    expect(r.events.map((e) => ('t' in e ? e.t : -1))).toEqual([0, 94, 95, 96, 97, 98, 99, 100]);
    expect(r.dropped).toBe(94);
    r.clear();
    expect(r.events.map((e) => e.type)).toEqual(['config']);
    r.emit(queue(101));
    expect(r.events.map((e) => ('t' in e ? e.t : -1))).toEqual([0, 101]);
    const all = new TraceRecorder();
    for (let t = 1; t <= 100; t++) all.emit(queue(t));
    expect(all.events).toHaveLength(100);
  });

  it('with the config still in the window, nothing is added', () => {
    const r = new TraceRecorder(10);
    r.emit(config(0, 2));
    for (let t = 1; t <= 5; t++) r.emit(queue(t));
    expect(r.events).toHaveLength(6);
  });
});
