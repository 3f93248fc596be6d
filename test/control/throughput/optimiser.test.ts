// The threshold optimiser: exhaustive over the feasible set, or coordinate search when it is large.
import { describe, expect, it } from 'vitest';
import { estimateChainStates, optimiseThresholds, solveThroughput, ThroughputError, type OptimiseInput } from '../../../runtime/control/throughput/index.ts';

const three: OptimiseInput = {
  N: 4,
  P: [
    [0.7, 0.2, 0.1],
    [0.6, 0.3, 0.1],
    [1, 0, 0],
  ],
  C: [
    [1, 0, 0],
    [1, 1, 0],
    [1, 1, 1],
  ],
  latency: (i) => [5, 12, 25][i],
  maxBatch: [4, 4, 4],
};

describe('optimiseThresholds', () => {
  it('exhaustive: best is the true maximum over the feasible set, with runner-up and margin', () => {
    const r = optimiseThresholds(three);
    expect(r.exhaustive).toBe(true);
    const all = r.table.map((x) => x.tokensPerSec);
    expect(r.predicted).toBe(Math.max(...all));
    expect(r.runnerUp).not.toBeNull();
    expect(r.margin).toBeCloseTo((r.predicted - r.runnerUp!.predicted) / r.predicted, 12);
    for (const row of r.table) expect(row.thresholds.reduce((s, t) => s + t - 1, 0)).toBeLessThan(4);
    // The reported value is what solveThroughput says for that vector.
    expect(solveThroughput({ ...three, thresholds: r.best }).tokensPerSec).toBeCloseTo(r.predicted, 9);
  });

  it('coordinate search reaches the exhaustive optimum on a small case and evaluates fewer vectors', () => {
    const full = optimiseThresholds(three);
    const search = optimiseThresholds(three, { maxExhaustive: 1 });
    expect(search.exhaustive).toBe(false);
    expect(search.table.length).toBeLessThan(full.table.length);
    expect(search.predicted).toBeCloseTo(full.predicted, 9);
  });

  it('respects fixed thresholds and fails cleanly when nothing is feasible', () => {
    const r = optimiseThresholds(three, { fixed: { 0: 2 } });
    for (const row of r.table) expect(row.thresholds[0]).toBe(2);
    expect(() => optimiseThresholds(three, { fixed: { 0: 3, 1: 3 } })).toThrow(ThroughputError);
  });

  it('candidates whose chain is too big are simulated: same choice as the chain, within the stated error', () => {
    const r2r: OptimiseInput = {
      N: 8,
      P: [
        [0.65, 0.35],
        [1, 0],
      ],
      C: [
        [1, 0],
        [1, 0],
      ],
      latency: (i) => [6, 27.9][i],
      maxBatch: [8, 8],
    };
    const exact = optimiseThresholds(r2r, { fixed: { 0: 1 } });
    const sim = optimiseThresholds(r2r, { fixed: { 0: 1 }, maxChainStates: 0, simulation: { relTolerance: 0.002, budgetMs: 20_000 } });
    expect(exact.table.every((row) => row.method === 'chain')).toBe(true);
    expect(sim.table.every((row) => row.method === 'simulate' && row.states === 0 && row.relHalfWidth! <= 0.002)).toBe(true);
    // Every candidate agrees with its exact value, and the simulated pick is worth what the exact pick is.
    for (const row of sim.table) {
      const truth = exact.table.find((x) => x.thresholds.join() === row.thresholds.join())!.tokensPerSec;
      expect(Math.abs(row.tokensPerSec - truth) / truth).toBeLessThan(0.01);
    }
    const pickedUnderChain = exact.table.find((x) => x.thresholds.join() === sim.best.join())!.tokensPerSec;
    expect(pickedUnderChain).toBeGreaterThan(exact.predicted * 0.99);
  });

  it('three models at N = 32 (a chain of tens of millions of states) still gets an answer, by simulation', () => {
    const big: OptimiseInput = { ...three, N: 32, maxBatch: [32, 32, 32] };
    expect(estimateChainStates({ ...big, thresholds: [1, 1, 1] })).toBeGreaterThan(1e7);
    const t0 = performance.now();
    const r = optimiseThresholds(big, { fixed: { 0: 1, 1: 1 }, maxExhaustive: 4, simulation: { budgetMs: 300, replicationMs: 20_000 } });
    expect(r.table.every((row) => row.method === 'simulate')).toBe(true);
    expect(r.table.length).toBeGreaterThan(3);
    expect(r.predicted).toBeGreaterThan(0);
    expect(performance.now() - t0).toBeLessThan(60_000);
  }, 90_000);
});
