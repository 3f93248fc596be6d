// The paper's R2R setting: predicted throughput per large-model threshold, its argmax, and checks on it.
import { describe, expect, it } from 'vitest';
import { optimiseThresholds, simulateThroughput, solveThroughput, type ThroughputInput } from '../../../runtime/control/throughput/index.ts';

const p = 0.35;
const r2r = (N: number, Tl = 1): ThroughputInput => ({
  N,
  P: [
    [1 - p, p],
    [1, 0],
  ],
  C: [
    [1, 0],
    [1, 0],
  ],
  latency: (i) => (i === 0 ? 6.0 : 27.9),
  maxBatch: [N, N],
  thresholds: [1, Tl],
});

describe('R2R (p = 0.35, L_small = 6.0 ms, L_large = 27.9 ms), small threshold 1', () => {
  it.each([4, 8, 12, 16])('N = %i: large threshold 1…N, argmax', (N) => {
    const { thresholds: _omit, ...input } = r2r(N);
    const opt = optimiseThresholds(input, { fixed: { 0: 1 } });
    expect(opt.exhaustive).toBe(true);
    expect(opt.table).toHaveLength(N);
    const rows = [...opt.table].sort((a, b) => a.thresholds[1] - b.thresholds[1]);
    console.log(
      `R2R N=${N}: ` +
        rows.map((r) => `T_l=${r.thresholds[1]} ${r.tokensPerSec.toFixed(2)}`).join(', ') +
        ` → argmax T_l=${opt.best[1]} (${opt.predicted.toFixed(2)} tok/s, margin ${(opt.margin * 100).toFixed(2)}%)`,
    );
    expect(opt.best[0]).toBe(1);
    expect(opt.predicted).toBe(Math.max(...rows.map((r) => r.tokensPerSec)));
    // Thresholds are "not larger is better": T_l = N (wait for everyone) is never the optimum.
    expect(opt.best[1]).toBeLessThan(N);
    expect(rows[N - 1].tokensPerSec).toBeLessThan(opt.predicted);
  });

  it('N = 4: every prediction within 1% of continuous-time Monte Carlo, and the same argmax', () => {
    const pred = [1, 2, 3, 4].map((T) => solveThroughput(r2r(4, T)).tokensPerSec);
    const sim = [1, 2, 3, 4].map((T) => simulateThroughput(r2r(4, T), { horizonMs: 600_000, seed: T }).tokensPerSec);
    pred.forEach((x, k) => expect(Math.abs(x - sim[k]) / sim[k]).toBeLessThan(0.01));
    expect(pred.indexOf(Math.max(...pred))).toBe(sim.indexOf(Math.max(...sim)));
  });

  it('higher N never lowers throughput at thresholds 1', () => {
    let prev = 0;
    for (let N = 1; N <= 16; N++) {
      const r = solveThroughput(r2r(N));
      expect(r.tokensPerSec).toBeGreaterThanOrEqual(prev);
      prev = r.tokensPerSec;
    }
  });
});

describe('beyond the paper setting', () => {
  it('three models with batch-dependent latency: agrees with Monte Carlo within 1.5%', () => {
    const x: ThroughputInput = {
      N: 5,
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
      latency: (i, b) => [5, 12, 25][i] + [0.5, 1, 2][i] * (b - 1),
      maxBatch: [5, 5, 5],
      thresholds: [1, 2, 1],
    };
    const r = solveThroughput(x);
    const s = simulateThroughput(x, { horizonMs: 1_000_000, seed: 5 });
    expect(r.converged).toBe(true);
    expect(Math.abs(r.tokensPerSec - s.tokensPerSec) / s.tokensPerSec).toBeLessThan(0.015);
    for (let i = 0; i < 3; i++) expect(Math.abs(r.idleFraction[i] - s.idleFraction[i])).toBeLessThan(0.02);
  });

  it('latency given as a table ms[model][batch − 1] equals the same latency as a function', () => {
    const table = [
      [6, 6.5, 7, 7.5],
      [28, 30, 32, 34],
    ];
    const a = solveThroughput({ ...r2r(4, 2), latency: table });
    const b = solveThroughput({ ...r2r(4, 2), latency: (i, n) => table[i][n - 1] });
    expect(a.tokensPerSec).toBe(b.tokensPerSec);
  });

  it('pruneBelow drops only negligible outcomes: a smaller chain, the same answer to 0.1%', () => {
    const x: ThroughputInput = {
      N: 8,
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
      latency: (i) => [5, 10, 25][i],
      maxBatch: [8, 8, 8],
      thresholds: [1, 2, 2],
    };
    const exact = solveThroughput(x);
    const pruned = solveThroughput({ ...x, pruneBelow: 1e-4 });
    expect(exact.prunedMass).toBe(0);
    expect(pruned.prunedMass).toBeGreaterThan(0);
    expect(pruned.transitions).toBeLessThan(exact.transitions);
    expect(Math.abs(pruned.tokensPerSec - exact.tokensPerSec) / exact.tokensPerSec).toBeLessThan(0.001);
  });
});
