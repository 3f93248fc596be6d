// A prediction's band: step-latency quantiles per batch size, the run's ramp and drain left out, and the quartiles carried through the chain to tok/s.
import { describe, expect, it } from 'vitest';
import { bandOf, predictServing } from '../../runtime/eval/predictServing.ts';
import { type BatchTiming, edgeBatches, fitStepLatency } from '../../runtime/eval/routingCounts.ts';
import { fitLatencyProfile, quantileOf } from '../../runtime/control/throughput/index.ts';

/** Batches of `size` on `model` back to back from `t0` (no gaps), with the given walls: launch to launch is each wall. */
function backToBack(model: string, size: number, walls: readonly number[], t0 = 0): BatchTiming[] {
  let t = t0;
  return walls.map((w) => {
    const b = { model, size, start: t, end: t + w };
    t += w;
    return b;
  });
}

/** Walls cycling through 1, 1.5, 2 ms with one 40 ms stall in every `stallEvery` (another process on the machine). */
const walls = (n: number, stallEvery: number) => Array.from({ length: n }, (_, k) => (k % stallEvery === stallEvery - 1 ? 40 : [1, 1.5, 2][k % 3]));

const oneModel = { models: ['large'], P: [[1]], C: [[1]], steps: [1000] };

describe('step-latency quantiles', () => {
  it('quantileOf interpolates between order statistics', () => {
    expect(quantileOf([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantileOf([1, 2, 3, 4], 0.25)).toBeCloseTo(1.75, 12);
    expect(quantileOf([7], 0.9)).toBe(7);
    expect(quantileOf([], 0.5)).toBeNaN();
  });

  it('a median is not moved by a stalled step, a mean is', () => {
    const samples = walls(300, 50).map((ms) => ({ model: 0, batch: 1, ms }));
    const median = fitLatencyProfile(samples, { quantile: 0.5 }).table[0][0];
    const mean = fitLatencyProfile(samples).table[0][0];
    expect(median).toBe(1.5);
    // six stalls of 40 ms in 300 steps: +0.77 ms on a 1.5 ms mean
    expect(mean).toBeGreaterThan(2.2);
    expect(() => fitLatencyProfile(samples, { quantile: 1.5 })).toThrow(/quantile/);
  });

  it('leaves a size with too few samples to its neighbours and extrapolates on the trend of all sizes', () => {
    const s = (batch: number, ms: number, n: number) => Array.from({ length: n }, () => ({ model: 0, batch, ms }));
    // sizes 1..5 about a line of 0.5 ms + 0.5 ms per row, size 4 low and 5 high, and size 6 two wild samples
    const samples = [...s(1, 1, 20), ...s(2, 1.5, 20), ...s(3, 2, 20), ...s(4, 2, 20), ...s(5, 3, 20), ...s(6, 9, 2)];
    const fit = fitLatencyProfile(samples, { quantile: 0.5, minSamples: 5, extrapolate: 'trend', maxBatch: 8 });
    // size 6 is read on the trend, not from its two samples
    expect(fit.table[0][5]).toBeCloseTo(3 + 0.45, 9);
    // the trend through all five sizes, 0.45 ms a row, near the line's 4.5 ms at b = 8
    expect(fit.table[0][7]).toBeCloseTo(3 + 3 * 0.45, 9);
    // the last two knots' slope (1 ms a row) would give 6
    const last = fitLatencyProfile(samples, { minSamples: 5, maxBatch: 8 });
    expect(last.table[0][7]).toBeCloseTo(6, 9);
    // and without a floor on the samples, the wild size is a knot
    expect(fitLatencyProfile(samples, { maxBatch: 8 }).table[0][5]).toBe(9);
  });

  it("a quantile fit leaves out the run's ramp and drain", () => {
    // 400 steady steps of 1 ms between a ramp and a drain of 20 slow (5 ms) steps each
    const run = backToBack('large', 1, [...Array(20).fill(5), ...Array(400).fill(1), ...Array(20).fill(5)]);
    const p90 = fitStepLatency(run, ['large'], 1, [], { quantile: 0.9 });
    expect(p90.latency[0][0]).toBe(1);
    // an evaluation and, ten minutes on, a live window: each stretch loses its own ends, neither the other's middle
    const live = backToBack('large', 1, [...Array(20).fill(5), ...Array(400).fill(3), ...Array(20).fill(5)], 600_000);
    const cut = edgeBatches([...run, ...live]);
    // 5 % of each span at each end: about 6 of the run's slow steps a side (30 of 600 ms) and 14 of the live window's (70 of 1,400 ms)
    expect([...cut].filter((k) => k < 440).length).toBeGreaterThanOrEqual(12);
    expect([...cut].filter((k) => k >= 440).length).toBeGreaterThanOrEqual(27);
    expect([...cut].every((k) => k % 440 < 20 || k % 440 >= 420)).toBe(true);
    expect(fitStepLatency([...run, ...live], ['large'], 1, [], { quantile: 0.75 }).latency[0][0]).toBe(3);
    // the mean fit keeps every batch, as before
    const mean = fitStepLatency(run, ['large'], 1);
    expect(mean.latency[0][0]).toBeCloseTo((40 * 5 + 400) / 440, 9);
  });
});

describe('the band a prediction carries', () => {
  const input = (batches: BatchTiming[]) => ({
    routing: oneModel,
    meanOutputTokens: 32,
    concurrency: 1,
    lanes: [{ name: 'large', maxBatch: 8, threshold: 1 }],
    maxWaitMs: 5,
    batches,
  });

  it('one model at one in flight: tok/s at the mean step, the band at the quartile steps', () => {
    // steps of 1, 1.5, 2 ms in equal numbers: quartiles 1 and 2 ms, mean 1.5 ms
    const p = predictServing(input(backToBack('large', 1, walls(600, 1000))));
    const s = p.current!;
    expect(s.tokS).toBeCloseTo(1000 / 1.5, 0);
    expect(s.tokSBand.low).toBeCloseTo(1000 / 2, 0);
    expect(s.tokSBand.high).toBeCloseTo(1000 / 1, 0);
  });

  it('narrows as the steps agree, and rare stalls slow the figure and the band stretches to hold it', () => {
    const steady = predictServing(
      input(
        backToBack(
          'large',
          1,
          Array.from({ length: 600 }, (_, k) => 1.4 + 0.2 * (k % 2)),
        ),
      ),
    );
    expect(steady.current!.tokSBand.high / steady.current!.tokSBand.low).toBeLessThan(1.2);
    const stalled = predictServing(input(backToBack('large', 1, walls(600, 60))));
    const plain = predictServing(input(backToBack('large', 1, walls(600, 1000))));
    // ten 40 ms stalls in 600 steps of 1.5 ms on average: the mean step is 2.1 ms
    expect(stalled.current!.tokS).toBeCloseTo((1000 * 600) / walls(600, 60).reduce((a, x) => a + x, 0), 0);
    expect(stalled.current!.tokS).toBeLessThan(plain.current!.tokS * 0.8);
    // the quartile steps are the same; the band's low end is the slower figure
    expect(stalled.current!.tokSBand).toEqual({ low: stalled.current!.tokS, high: plain.current!.tokSBand.high });
  });

  it('bandOf orders its ends and always holds the centre', () => {
    expect(bandOf(100, 80, 130)).toEqual({ low: 80, high: 130 });
    // a chain whose optimum moves can land a quartile past the centre: the band still holds it
    expect(bandOf(100, 105, 130)).toEqual({ low: 100, high: 130 });
    expect(bandOf(100, 70, 90)).toEqual({ low: 70, high: 100 });
  });
});
