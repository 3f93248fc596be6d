// Batch timings from the trace: a batch launched from an idle lane carries when the lane woke, and the fit times its gap from there.
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { BatchTimer, fitStepLatency, type BatchTiming } from '../../runtime/eval/routingCounts.ts';

const batch = (model: string, n: number, start: number, end: number): TraceEvent => ({ type: 'batch', model, batchId: start, requestIds: Array.from({ length: n }, (_, i) => `r${i}`), phase: 'decode', tokens: n, start, end });
const wake = (model: string, t: number): TraceEvent => ({ type: 'queue', t, model, length: 1 });

describe('BatchTimer', () => {
  it('gives a batch after a wake of its own model the wake, and no other batch', () => {
    const timer = new BatchTimer();
    const events = [batch('small', 2, 0, 1), wake('large', 1.5), wake('small', 5), batch('small', 1, 5.2, 6), batch('small', 1, 6.1, 7), batch('large', 1, 1.6, 8)];
    const got = events.flatMap((e) => timer.timing(e) ?? []);
    expect(got.map((b) => b.woke)).toEqual([undefined, 5, undefined, 1.5]);
    expect(got.map((b) => [b.model, b.size, b.start, b.end])).toEqual([['small', 2, 0, 1], ['small', 1, 5.2, 6], ['small', 1, 6.1, 7], ['large', 1, 1.6, 8]]);
  });

  it('leaves an idle stretch out of the step latency the prediction fits', () => {
    // one batch size, each batch 1 ms, then 0.2 ms to the next launch; every other launch after 5 ms idle
    const timer = new BatchTimer();
    const events: TraceEvent[] = [];
    let t = 0;
    for (let k = 0; k < 40; k++) {
      if (k % 2 === 1) {
        t += 5;
        events.push(wake('small', t - 0.2));
      }
      events.push(batch('small', 1, t, t + 1));
      t += 1.2;
    }
    const timed = events.flatMap((e) => timer.timing(e) ?? []);
    const withWakes = fitStepLatency(timed, ['small'], 1).latency[0][0];
    const without = fitStepLatency(timed.map(({ woke: _w, ...b }): BatchTiming => b), ['small'], 1).latency[0][0];
    expect(withWakes).toBeCloseTo((39 * 1.2 + 1) / 40, 6); // the last batch has no next launch: its wall time
    expect(without).toBeGreaterThan(3);
  });
});
