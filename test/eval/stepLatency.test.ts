// Step latency for a prediction: the algorithm's own batches as timed, other traffic's with their wall time and the algorithm's own gaps.
import { describe, expect, it } from 'vitest';
import { fitStepLatency, type BatchTiming } from '../../runtime/eval/routingCounts.ts';

/** `n` batches of `size` on `model` from `t0`, each `wall` ms long and launched every `every` ms. */
function run(model: string, size: number, n: number, wall: number, every: number, t0: number): BatchTiming[] {
  return Array.from({ length: n }, (_, k) => ({ model, size, start: t0 + k * every, end: t0 + k * every + wall }));
}

describe('fitStepLatency', () => {
  it('times its own batches launch to launch', () => {
    const fit = fitStepLatency(run('small', 2, 11, 1, 1.5, 0), ['small'], 2);
    // ten of 1.5 ms, the last its wall time alone
    expect(fit.latency[0][1]).toBeCloseTo((10 * 1.5 + 1) / 11, 9);
    expect(fit.counts).toEqual({ small: 11 });
  });

  it("gives other traffic's batches their wall time and the algorithm's own gap, size by size", () => {
    // gaps 0.5 at b = 2, 0.1 at b = 4 (each run's last batch has none: a pause of 1 s or more follows)
    const own = [...run('small', 2, 11, 1, 1.5, 0), ...run('small', 4, 11, 2, 2.1, 5000)];
    // another algorithm's traffic idles between its batches (5 ms gaps): its walls are slower, its gaps are its own
    const other = [...run('small', 2, 11, 1.2, 6.2, 10_000), ...run('small', 3, 11, 1.6, 6.6, 20_000)];
    const fit = fitStepLatency(own, ['small'], 4, other);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // b = 2: own ten 1.5 + one 1; other eleven 1.2 + the own mean gap at b = 2, 5 / 11
    expect(fit.latency[0][1]).toBeCloseTo(mean([...Array(10).fill(1.5), 1, ...Array(11).fill(1.2 + 5 / 11)]), 9);
    // b = 3: only other traffic, with the algorithm's mean gap over all sizes (10 × 0.5 + 10 × 0.1) / 22
    const b3 = 1.6 + (10 * 0.5 + 10 * 0.1) / 22;
    expect(fit.latency[0][2]).toBeGreaterThan(b3 - 0.2);
    expect(fit.latency[0][2]).toBeLessThan(b3 + 0.2);
    expect(fit.counts).toEqual({ small: 44 });
    // as the old fit did, other traffic's own idle gaps would have made b = 2 about 3× slower
    const asTimed = fitStepLatency([...own, ...other], ['small'], 4);
    expect(asTimed.latency[0][1]).toBeGreaterThan(fit.latency[0][1] * 1.8);
  });

  it("keeps other traffic's times as they were when the algorithm has no batch on that model", () => {
    const fit = fitStepLatency(run('small', 1, 5, 1, 1, 0), ['small', 'large'], 1, run('large', 1, 11, 4, 5, 10_000));
    expect(fit.latency[1][0]).toBeCloseTo((10 * 5 + 4) / 11, 9);
  });
});
