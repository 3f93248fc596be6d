// Step latency for a prediction: a model the live traffic never ran gets the evaluation's times, scaled by how much slower live traffic ran the others.
import { describe, expect, it } from 'vitest';
import { fitStepLatency, type BatchTiming } from '../../runtime/eval/routingCounts.ts';

/** `n` back-to-back batches of `size` on `model` from `t0`, each `ms` launch to launch (the last one's wall time alone). */
function run(model: string, size: number, n: number, ms: number, t0: number): BatchTiming[] {
  return Array.from({ length: n }, (_, k) => ({ model, size, start: t0 + k * ms, end: t0 + (k + 1) * ms }));
}

describe('fitStepLatency', () => {
  it('scales a model with evaluation batches only by the live ÷ evaluation ratio of the models seen both ways', () => {
    const evaluation = [...run('small', 2, 50, 1, 0), ...run('medium', 2, 50, 2, 0)];
    const live = run('small', 2, 50, 1.5, 10_000); // 1.5× slower over HTTP; medium not run live
    const fit = fitStepLatency(evaluation, ['small', 'medium'], 2, live);
    expect(fit.liveFactor).toBeCloseTo(1.5, 9);
    expect(fit.latency[0][1]).toBeCloseTo((50 * 1 + 50 * 1.5) / 100, 9); // small: both, as they are
    expect(fit.latency[1][1]).toBeCloseTo(2 * 1.5, 9); // medium: the evaluation's 2 ms, scaled
    expect(fit.counts).toEqual({ small: 100, medium: 50 });
  });

  it('leaves every time as measured when no model was seen both ways', () => {
    const fit = fitStepLatency(run('medium', 1, 20, 2, 0), ['medium', 'large'], 1, run('large', 1, 20, 5, 10_000));
    expect(fit.liveFactor).toBeNull();
    expect(fit.latency[0][0]).toBeCloseTo(2, 9);
    expect(fit.latency[1][0]).toBeCloseTo(5, 9);
  });
});
