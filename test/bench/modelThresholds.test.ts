// Thresholds from the throughput model: routing and latency estimated from a recorded run, then solved.
import { describe, expect, it } from 'vitest';
import { servingMetrics } from '../../runtime/loadgen/requestMetrics.ts';
import { chooseThresholds } from '../../runtime/bench/modelThresholds.ts';
import type { BatchTiming, RecordedStep, ServingResult } from '../../runtime/bench/servingCase.ts';

/** A fake calibration: R2R-like steps (small → large every 4th step, back after one) and flat latencies. */
function calibration(largeMs: (rows: number) => number): ServingResult {
  const steps: RecordedStep[] = [];
  for (let r = 0; r < 20; r++) {
    for (let k = 0; k < 40; k++) {
      if (k % 4 === 3) {
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
  return { run: { metrics: servingMetrics([]), records: [], tokensByModel: {}, handoffs: 0, discardedTokens: 0 }, lanes: [], batches, steps };
}

describe('chooseThresholds', () => {
  it('estimates P and C from the recorded steps', () => {
    const ch = chooseThresholds(calibration(() => 28), ['small', 'large'], 4);
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
    expect(ch.table[0].predicted_tok_s).toBe(ch.predicted);
  });

  it('batches the large model when its batches are nearly free, not when they cost per row', () => {
    const flat = chooseThresholds(calibration(() => 28), ['small', 'large'], 8);
    const linear = chooseThresholds(calibration((b) => 28 * b), ['small', 'large'], 8);
    expect(flat.mode.thresholds!.large).toBeGreaterThanOrEqual(linear.mode.thresholds!.large);
    expect(linear.mode.thresholds!.large).toBe(1);
  });
});
