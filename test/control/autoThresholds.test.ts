// thresholds: "auto" follows routing that changes halfway and lands near a run started with the right thresholds.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { AutoThresholds } from '../../runtime/control/autoThresholds.ts';
import { dtmcOptimiser } from '../../runtime/control/dtmcOptimiser.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { measureSteady } from '../support/steadyState.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';

const N = 12;
const LAT = [6.0, 27.9];

function cluster(thresholds: number[], trace?: TraceRecorder) {
  const clock = new VirtualClock();
  const c = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: N,
    maxWaitMs: 60_000,
    trace,
    models: ['small', 'large'].map((name, i) => ({ name, runner: new SimRunner({ name, latency: () => LAT[i] }), maxBatch: N, threshold: thresholds[i] })),
  });
  return { clock, c };
}

describe('auto thresholds', () => {
  it('move to the new optimum when routing changes, and match a run started right', () => {
    const before = 0.05;
    const after = 0.6;
    const half = 60_000;
    const end = 150_000;
    // Where the model says the optimum is for each routing probability.
    const optFor = (p: number) =>
      dtmcOptimiser(
        {
          N,
          P: r2rMarkov(p).P,
          C: [
            [1, 0],
            [1, 0],
          ],
          latency: LAT.map((l) => Array(N).fill(l)),
          maxBatch: [N, N],
          fixed: { 0: 1 },
        },
        [1, 1],
      ).best;
    const optBefore = optFor(before);
    const optAfter = optFor(after);
    expect(optAfter).not.toEqual(optBefore);

    // The auto run starts at thresholds that are poor for the first routing; routing flips at `half`.
    // As in the paper's validation, the small model's threshold stays at 1 and the large one moves.
    const trace = new TraceRecorder(2000);
    const { clock, c } = cluster([1, 6], trace);
    const auto = new AutoThresholds(c, { optimise: dtmcOptimiser, everyMs: 3000, windowMs: 8000, hysteresis: 0.03, maxBatchCap: N, fixed: { small: 1 } });
    trace.subscribe(auto.onEvent);
    auto.start();
    let p = before;
    const spec = () => markovAlgorithm(r2rMarkov(p));
    let algs = { p, alg: spec() };
    const pick = () => {
      if (algs.p !== p) algs = { p, alg: spec() };
      return algs.alg;
    };
    const afterWindow = { from: half + 30_000, tokens: 0 };
    const r = measureSteady(c, clock, pick, {
      concurrency: N,
      promptLength: 8,
      maxTokens: 2000,
      warmupMs: afterWindow.from,
      horizonMs: end,
      everyMs: 1000,
      onTick: (now) => {
        if (now >= half) p = after;
      },
    });
    auto.stop();
    const final = c.inProcessEngines.map((l) => l.threshold);
    expect(auto.changes.length).toBeGreaterThanOrEqual(1);
    expect(auto.changes.some((ch) => ch.t < half)).toBe(true);
    expect(auto.changes.some((ch) => ch.t >= half)).toBe(true);
    // The large-model threshold lands at (or next to) the new optimum.
    expect(Math.abs(final[1] - optAfter[1])).toBeLessThanOrEqual(1);

    // Reference: the right thresholds for the new routing from the start.
    const ref = cluster(optAfter);
    const rr = measureSteady(ref.c, ref.clock, markovAlgorithm(r2rMarkov(after)), {
      concurrency: N,
      promptLength: 8,
      maxTokens: 2000,
      warmupMs: 30_000,
      horizonMs: 120_000,
    });
    expect(r.tokS / rr.tokS).toBeGreaterThan(0.9);
  }, 240_000);
});
