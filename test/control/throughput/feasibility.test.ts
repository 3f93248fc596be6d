// Infeasible or malformed thresholds are rejected with a typed error before any chain is built.
import { describe, expect, it } from 'vitest';
import { checkFeasible, countFeasible, feasibleThresholds, isFeasible, solveThroughput, ThroughputError } from '../../../runtime/control/throughput/index.ts';

const base = {
  P: [
    [0.65, 0.35],
    [1, 0],
  ],
  C: [
    [1, 0],
    [1, 0],
  ],
  latency: (i: number) => (i === 0 ? 6 : 27.9),
  maxBatch: [8, 8],
};

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ThroughputError);
    return (e as ThroughputError).code;
  }
  return undefined;
}

describe('feasibility Σ(T_i − 1) < N', () => {
  it('accepts the boundary and rejects one past it', () => {
    expect(isFeasible([2, 3], 4)).toEqual({ feasible: true, slack: 3, N: 4 });
    expect(isFeasible([3, 3], 4).feasible).toBe(false);
    expect(() => checkFeasible([2, 3], 4)).not.toThrow();
    expect(codeOf(() => checkFeasible([3, 3], 4))).toBe('INFEASIBLE_THRESHOLDS');
  });

  it('solveThroughput refuses infeasible thresholds instead of returning a deadlocked answer', () => {
    expect(codeOf(() => solveThroughput({ ...base, N: 4, thresholds: [2, 4] }))).toBe('INFEASIBLE_THRESHOLDS');
    expect(codeOf(() => solveThroughput({ ...base, N: 4, thresholds: [1, 4] }))).toBeUndefined();
  });

  it('rejects thresholds outside [1, maxBatch] and malformed inputs as INVALID_INPUT', () => {
    expect(codeOf(() => solveThroughput({ ...base, N: 4, thresholds: [0, 1] }))).toBe('INVALID_INPUT');
    expect(codeOf(() => solveThroughput({ ...base, N: 20, maxBatch: [8, 4], thresholds: [1, 5] }))).toBe('INVALID_INPUT');
    expect(codeOf(() => solveThroughput({ ...base, N: 4, thresholds: [1.5, 1] }))).toBe('INVALID_INPUT');
    expect(
      codeOf(() =>
        solveThroughput({
          ...base,
          N: 4,
          P: [
            [0.5, 0.4],
            [1, 0],
          ],
          thresholds: [1, 1],
        }),
      ),
    ).toBe('INVALID_INPUT');
    expect(codeOf(() => solveThroughput({ ...base, N: 4, latency: [[6], [27.9]], thresholds: [1, 1] }))).toBe('INVALID_INPUT');
  });

  it('enumerates exactly the feasible set', () => {
    const all = feasibleThresholds([4, 4, 4], 4);
    expect(all.length).toBe(countFeasible([4, 4, 4], 4));
    for (const t of all) expect(isFeasible(t, 4).feasible).toBe(true);
    // Brute force over the box for comparison.
    let n = 0;
    for (let a = 1; a <= 4; a++) for (let b = 1; b <= 4; b++) for (let c = 1; c <= 4; c++) if (a + b + c - 3 < 4) n++;
    expect(all.length).toBe(n);
    expect(feasibleThresholds([4, 4], 4, { 0: 1 })).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
      [1, 4],
    ]);
  });
});
