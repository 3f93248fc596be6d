// Hand-derived cases: the chain must reproduce renewal-reward and lock-step answers exactly.
import { describe, expect, it } from 'vitest';
import { solveThroughput } from '../../../runtime/control/throughput/index.ts';

const p = 0.35;
const R2R_P = [
  [1 - p, p],
  [1, 0],
];
const R2R_C = [
  [1, 0],
  [1, 0],
];

describe('one model', () => {
  it('runs all N requests in every batch: N · c / L(N)', () => {
    const r = solveThroughput({ N: 5, P: [[1]], C: [[2]], latency: (_m, b) => 8 + b, maxBatch: [8], thresholds: [3] });
    expect(r.states).toBe(1);
    expect(r.tokensPerSec).toBeCloseTo((1000 * 5 * 2) / 13, 9);
    expect(r.meanBatch).toEqual([5]);
    expect(r.idleFraction).toEqual([0]);
  });

  it('maxBatch below N leaves the rest queued: batches of maxBatch back to back', () => {
    const r = solveThroughput({ N: 5, P: [[1]], C: [[1]], latency: () => 10, maxBatch: [2], thresholds: [1] });
    expect(r.tokensPerSec).toBeCloseTo(200, 9);
    expect(r.meanBatch).toEqual([2]);
    expect(r.meanQueue[0]).toBeCloseTo(3, 9);
  });
});

describe('N = 1: one request is a renewal process', () => {
  it('R2R: throughput = 1 / (L_s + p·L_l) per ms, on an exact lattice', () => {
    // Cycle: 1/p small steps (commit 1−p each on average), then one large step (commits 1).
    // Tokens per cycle 1/p, time L_s/p + L_l.
    for (const [Ls, Ll, dtMs] of [
      [6, 28, undefined],
      [6, 27.9, 0.3],
    ] as const) {
      const r = solveThroughput({ N: 1, P: R2R_P, C: R2R_C, latency: (i) => (i === 0 ? Ls : Ll), maxBatch: [1, 1], thresholds: [1, 1], dtMs });
      expect(r.tokensPerSec).toBeCloseTo(1000 / (Ls + p * Ll), 6);
      // The large model is busy for L_l out of every L_s/p + L_l.
      expect(r.idleFraction[0]).toBeCloseTo((p * Ll) / (Ls + p * Ll), 6);
      expect(r.idleFraction[1]).toBeCloseTo(Ls / (Ls + p * Ll), 6);
      expect(r.meanBatch).toEqual([1, 1]);
    }
  });

  it('three models: Σ π_i c̄_i / Σ π_i L_i with π the single-request chain’s stationary law', () => {
    const P = [
      [0.6, 0.3, 0.1],
      [0.5, 0.2, 0.3],
      [0.7, 0.1, 0.2],
    ];
    const C = [
      [1, 0, 0],
      [1, 1, 0],
      [1, 1, 2],
    ];
    const L = [4, 10, 22];
    // Stationary law of P by a long power iteration (P is aperiodic here).
    let pi = [1, 0, 0];
    for (let k = 0; k < 2000; k++) pi = [0, 1, 2].map((j) => pi.reduce((s, x, i) => s + x * P[i][j], 0));
    const cbar = P.map((row, i) => row.reduce((s, x, j) => s + x * C[i][j], 0));
    const expected = (1000 * pi.reduce((s, x, i) => s + x * cbar[i], 0)) / pi.reduce((s, x, i) => s + x * L[i], 0);
    const r = solveThroughput({ N: 1, P, C, latency: (i) => L[i], maxBatch: [1, 1, 1], thresholds: [1, 1, 1] });
    expect(r.tokensPerSec).toBeCloseTo(expected, 6);
  });
});

describe('N = 2 with thresholds 1', () => {
  it('deterministic alternation: both requests move as one batch of 2', () => {
    const r = solveThroughput({
      N: 2,
      P: [
        [0, 1],
        [1, 0],
      ],
      C: [
        [1, 1],
        [1, 1],
      ],
      latency: (i) => (i === 0 ? 6 : 14),
      maxBatch: [2, 2],
      thresholds: [1, 1],
    });
    // 4 tokens every 6 + 14 ms.
    expect(r.tokensPerSec).toBeCloseTo(200, 8);
    expect(r.meanBatch).toEqual([2, 2]);
    expect(r.idleFraction[0]).toBeCloseTo(0.7, 8);
    expect(r.idleFraction[1]).toBeCloseTo(0.3, 8);
  });

  it('equal latencies: requests stay in lock-step, so they are two independent Markov chains', () => {
    const [a, b, L] = [0.3, 0.6, 10];
    const r = solveThroughput({
      N: 2,
      P: [
        [1 - a, a],
        [b, 1 - b],
      ],
      C: [
        [1, 0],
        [1, 1],
      ],
      latency: () => L,
      maxBatch: [2, 2],
      thresholds: [1, 1],
    });
    const pi1 = b / (a + b);
    const pi2 = 1 - pi1;
    const perStep = pi1 * (1 - a) + pi2 * 1;
    expect(r.tokensPerSec).toBeCloseTo((1000 * 2 * perStep) / L, 6);
    // Model 1 idles exactly when both requests sit at model 2, and vice versa.
    expect(r.idleFraction[0]).toBeCloseTo(pi2 * pi2, 6);
    expect(r.idleFraction[1]).toBeCloseTo(pi1 * pi1, 6);
    // Mean launched batch = E[count | count ≥ 1] for a Binomial(2, π).
    expect(r.meanBatch[0]).toBeCloseTo((2 * pi1) / (1 - pi2 * pi2), 6);
    expect(r.meanBatch[1]).toBeCloseTo((2 * pi2) / (1 - pi1 * pi1), 6);
  });
});
