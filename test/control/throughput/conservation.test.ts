// Invariants any correct solution must satisfy, on R2R, three models and batch-dependent latency.
import { describe, expect, it } from 'vitest';
import { buildChain } from '../../../runtime/control/throughput/buildChain.ts';
import { timeStepOf } from '../../../runtime/control/throughput/chooseTimeStep.ts';
import { normaliseInput } from '../../../runtime/control/throughput/normaliseInput.ts';
import { solveStationary } from '../../../runtime/control/throughput/solveStationary.ts';
import { solveThroughput, type ThroughputInput } from '../../../runtime/control/throughput/index.ts';

const p = 0.35;
const cases: [string, ThroughputInput][] = [
  [
    'R2R N=8 T=(1,3)',
    {
      N: 8,
      P: [
        [1 - p, p],
        [1, 0],
      ],
      C: [
        [1, 0],
        [1, 0],
      ],
      latency: (i) => (i === 0 ? 6 : 27.9),
      maxBatch: [8, 8],
      thresholds: [1, 3],
    },
  ],
  [
    'R2R batch-dependent N=6 maxBatch 4',
    {
      N: 6,
      P: [
        [1 - p, p],
        [1, 0],
      ],
      C: [
        [1, 0],
        [1, 0],
      ],
      latency: (i, b) => (i === 0 ? 4 + 0.5 * b : 18 + 3 * b),
      maxBatch: [4, 4],
      thresholds: [1, 2],
    },
  ],
  [
    'R2R contended N=6 T=(1,2)',
    {
      N: 6,
      P: [
        [1 - p, p],
        [1, 0],
      ],
      C: [
        [1, 0],
        [1, 0],
      ],
      latency: (i) => (i === 0 ? 6 : 27),
      contendedLatency: (i) => (i === 0 ? 9 : 30),
      maxBatch: [6, 6],
      thresholds: [1, 2],
    },
  ],
  [
    'three models N=5',
    {
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
      latency: (i, b) => [5, 12, 25][i] * (1 + 0.05 * (b - 1)),
      maxBatch: [5, 3, 3],
      thresholds: [1, 2, 1],
    },
  ],
];

describe.each(cases)('%s', (_name, input) => {
  it('stationary probabilities are a distribution with a small residual', () => {
    const m = normaliseInput(input);
    const chain = buildChain(m, timeStepOf(m, input));
    const st = solveStationary(chain);
    let sum = 0;
    for (const x of st.pi) {
      expect(x).toBeGreaterThanOrEqual(0);
      sum += x;
    }
    expect(sum).toBeCloseTo(1, 12);
    expect(st.converged).toBe(true);
    expect(st.residual).toBeLessThan(1e-9);
    // Each row of the transition matrix sums to 1.
    let worst = 0;
    for (let s = 0; s < chain.size; s++) {
      let row = 0;
      for (let k = chain.rowPtr[s]; k < chain.rowPtr[s + 1]; k++) row += chain.val[k];
      worst = Math.max(worst, Math.abs(row - 1));
    }
    expect(worst).toBeLessThan(1e-12);
  });

  it('throughput, batch and idle figures respect their bounds and each other', () => {
    const r = solveThroughput(input);
    const K = input.maxBatch.length;
    const m = normaliseInput(input);
    // Upper bound: every model always busy at its most efficient batch size, each step committing the most.
    let bound = 0;
    for (let i = 0; i < K; i++) {
      let best = 0;
      for (let b = 1; b <= m.maxBatch[i]; b++) best = Math.max(best, b / r.effectiveLatencyMs[i][b - 1]);
      bound += 1000 * best * Math.max(...input.C[i]);
    }
    expect(r.tokensPerSec).toBeGreaterThan(0);
    expect(r.tokensPerSec).toBeLessThanOrEqual(bound);
    // The same bound at maxBatch, valid here because b / L(b) grows with b in every case above.
    const atMax = input.maxBatch.reduce((s, _B, i) => {
      const B = m.maxBatch[i];
      return s + (1000 * B * Math.max(...input.C[i])) / r.effectiveLatencyMs[i][B - 1];
    }, 0);
    expect(r.tokensPerSec).toBeLessThanOrEqual(atMax);
    // Tokens come only from steps: Σ_i steps_i · c̄_i.
    const fromSteps = r.stepsPerSec.reduce((s, x, i) => s + x * m.commitPerStep[i], 0);
    expect(r.tokensPerSec).toBeCloseTo(fromSteps, 6);
    // Closed system: every request is queued or in service somewhere.
    const total = r.meanQueue.reduce((a, b) => a + b, 0) + r.meanInService.reduce((a, b) => a + b, 0);
    expect(total).toBeCloseTo(input.N, 9);
    for (let i = 0; i < K; i++) {
      expect(r.idleFraction[i]).toBeGreaterThanOrEqual(0);
      expect(r.idleFraction[i]).toBeLessThanOrEqual(1);
      expect(r.utilisation[i]).toBeCloseTo(1 - r.idleFraction[i], 12);
      // Delayed batching never launches below the threshold nor above maxBatch.
      if (r.batchesPerSec[i] > 0) {
        expect(r.meanBatch[i]).toBeGreaterThanOrEqual(input.thresholds[i] - 1e-9);
        expect(r.meanBatch[i]).toBeLessThanOrEqual(m.maxBatch[i] + 1e-9);
      }
    }
  });
});
