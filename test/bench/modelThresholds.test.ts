// Thresholds from the throughput model: routing and latency estimated from a recorded run, then solved.
import { describe, expect, it } from 'vitest';
import { servingMetrics } from '../../runtime/loadgen/requestMetrics.ts';
import { chooseThresholds } from './modelThresholds.ts';
import { THRESHOLD_HYSTERESIS } from '../../runtime/control/autoThresholds.ts';
import type { BatchTiming, RecordedStep, ServingResult } from './servingCase.ts';

/** A fake calibration: R2R-like steps (small → large every `period`-th step, back after one) and flat latencies. */
function calibration(largeMs: (rows: number) => number, period = 4): ServingResult {
  const steps: RecordedStep[] = [];
  for (let r = 0; r < 20; r++) {
    for (let k = 0; k < 40; k++) {
      if (k % period === period - 1) {
        steps.push({ requestId: `r${r}`, model: 'small', next: 'large', committed: 0 });
        steps.push({ requestId: `r${r}`, model: 'large', next: 'small', committed: 1 });
      } else steps.push({ requestId: `r${r}`, model: 'small', committed: 1 });
    }
  }
  const batches: BatchTiming[] = [];
  let t = 0;
  for (let b = 1; b <= 4; b++) {
    for (let k = 0; k < 10; k++) {
      batches.push({ lane: 'small', startMs: t, endMs: t + 6, rows: b, tokens: b, phase: 'decode' });
      batches.push({ lane: 'large', startMs: t, endMs: t + largeMs(b), rows: b, tokens: b, phase: 'decode' });
      t += 100;
    }
  }
  return {
    run: { metrics: servingMetrics([]), records: [], tokensByModel: {}, handoffs: 0, discardedTokens: 0 },
    lanes: [],
    batches,
    steps,
    cpu: { serverMs: 0, clientMs: null, wallMs: 0, entryMainMs: null },
  };
}

describe('chooseThresholds', () => {
  it('estimates P and C from the recorded steps', () => {
    const ch = chooseThresholds(
      calibration(() => 28),
      ['small', 'large'],
      4,
    );
    expect(ch.P[0][1]).toBeCloseTo(10 / 40, 2); // 10 of every 40 small steps hand off
    expect(ch.P[1][0]).toBeCloseTo(1, 9);
    expect(ch.C[0][1]).toBe(0); // the handed-off small token is discarded
    expect(ch.C[1][0]).toBe(1);
    expect(ch.latency_ms.small[0]).toBeCloseTo(6, 9);
    expect(ch.mode).toMatchObject({ mode: 'async-delayed', retainState: true });
    expect(ch.mode.thresholds!.small).toBe(1);
    const t = ch.mode.thresholds!.large;
    expect(t - 1).toBeLessThan(4);
    expect(ch.predicted).toBeGreaterThan(0);
    expect(ch.table[0].predicted_tok_s).toBe(ch.best_predicted.predicted_tok_s);
    expect(ch.table.some((r) => r.thresholds.large === ch.mode.thresholds!.large && r.predicted_tok_s === ch.predicted)).toBe(true);
  });

  it('batches the large model when its batches are nearly free, not when they cost per row', () => {
    // Every other step on large: delaying it pays off well past the hysteresis.
    const flat = chooseThresholds(
      calibration(() => 28, 2),
      ['small', 'large'],
      8,
    );
    const linear = chooseThresholds(
      calibration((b) => 28 * b, 2),
      ['small', 'large'],
      8,
    );
    expect(flat.mode.thresholds!.large).toBeGreaterThan(1);
    expect(flat.predicted).toBe(flat.best_predicted.predicted_tok_s);
    expect(linear.mode.thresholds!.large).toBe(1);
  });

  it('keeps thresholds at 1 when the best beats them by no more than the live controller’s hysteresis', () => {
    // Every 4th step on large, N = 8: the model's best delays large, for a gain under 5 %.
    const ch = chooseThresholds(
      calibration(() => 28),
      ['small', 'large'],
      8,
    );
    expect(ch.best_predicted.thresholds.large).toBeGreaterThan(1);
    expect(ch.best_predicted.predicted_tok_s).toBeGreaterThan(ch.predicted);
    expect(ch.best_predicted.predicted_tok_s).toBeLessThanOrEqual(ch.predicted * (1 + THRESHOLD_HYSTERESIS));
    expect(ch.mode.thresholds).toEqual({ small: 1, large: 1 });
  });
});
