// The live batches a prediction reads: the trace's recent ones, and those taken when the run started, which a long run pushes out of the trace.
import { describe, expect, it } from 'vitest';
import { batchesIn, liveWindow } from '../../runtime/eval/liveWindow.ts';
import type { TraceEvent } from '../../shared/trace.ts';

const batch = (model: string, start: number, end: number, rows = 2): TraceEvent => ({
  type: 'batch',
  model,
  batchId: start,
  requestIds: Array.from({ length: rows }, (_, i) => `r${i}`),
  phase: 'decode',
  tokens: rows,
  start,
  end,
});

describe('live batches for a prediction', () => {
  it("leaves out the run's own batches and those older than the window", () => {
    const events = [batch('small', 0, 2), batch('small', 10, 12), batch('large', 20, 25), batch('small', 30, 32), batch('small', 40, 41, 3)];
    // the run spanned 19..33: its batches are timed apart
    expect(batchesIn(events, 5, { from: 19, to: 33 })).toEqual([
      { model: 'small', size: 2, start: 10, end: 12 },
      { model: 'small', size: 3, start: 40, end: 41 },
    ]);
  });

  it("keeps the batches taken at the run's start that the trace no longer holds, once each, in time order", () => {
    const before = [
      { model: 'small', size: 2, start: 1, end: 3 },
      { model: 'small', size: 2, start: 5, end: 7 },
      { model: 'large', size: 1, start: 6, end: 9 },
    ];
    // the trace now holds only from t = 6 on: the large batch at 6 is in both
    const recent = [
      { model: 'large', size: 1, start: 6, end: 9 },
      { model: 'small', size: 4, start: 50, end: 52 },
    ];
    expect(liveWindow(before, recent, 4)).toEqual([
      { model: 'small', size: 2, start: 5, end: 7 },
      { model: 'large', size: 1, start: 6, end: 9 },
      { model: 'small', size: 4, start: 50, end: 52 },
    ]);
    // with nothing taken before (no reader then), it is the trace's
    expect(liveWindow([], recent, 0)).toEqual(recent);
  });
});
