// The threshold optimiser: exhaustive over the feasible set, or coordinate search when it is large.
import { describe, expect, it } from 'vitest';
import { optimiseThresholds, solveThroughput, ThroughputError, type OptimiseInput } from '../../runtime/throughput/index.ts';

const three: OptimiseInput = {
  N: 4,
  P: [[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [1, 0, 0]],
  C: [[1, 0, 0], [1, 1, 0], [1, 1, 1]],
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
});
