// predictThroughput: the chain while its size estimate fits, else Monte Carlo replications with a stated 95% half-width.
import { describe, expect, it } from 'vitest';
import {
  estimateChainStates,
  predictThroughput,
  simulateWithConfidence,
  solveThroughput,
  type ThroughputInput,
} from '../../../runtime/control/throughput/index.ts';

const three = (N: number, T: number[] = [1, 1, 1]): ThroughputInput => ({
  N,
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
  maxBatch: [N, N, N],
  thresholds: T,
});

describe('predictThroughput', () => {
  it('estimates the chain size within a factor 1.5 at thresholds 1 (N = 8, 10), and over- rather than under-estimates with higher thresholds', () => {
    for (const N of [8, 10]) {
      const ratio = estimateChainStates(three(N)) / solveThroughput(three(N)).states;
      expect(ratio).toBeGreaterThan(1 / 1.5);
      expect(ratio).toBeLessThan(1.5);
    }
    expect(estimateChainStates(three(8, [1, 2, 3]))).toBeGreaterThan(solveThroughput(three(8, [1, 2, 3])).states);
  });

  it('uses the chain when it fits and reports no sampling error', () => {
    const p = predictThroughput(three(6));
    expect(p.method).toBe('chain');
    expect(p.simulation).toBeNull();
    expect(p.tokensPerSec).toBe(p.chain!.tokensPerSec);
  });

  it('falls back to simulation past maxStates, and the simulated mean agrees with the exact chain within its half-width (plus 0.3%)', () => {
    for (const T of [
      [1, 1, 1],
      [1, 2, 3],
    ]) {
      const exact = solveThroughput(three(6, T)).tokensPerSec;
      const p = predictThroughput(three(6, T), { maxStates: 10, relTolerance: 0.003 });
      expect(p.method).toBe('simulate');
      const sim = p.simulation!;
      expect(sim.replications).toBeGreaterThanOrEqual(8);
      expect(Math.abs(p.tokensPerSec - exact)).toBeLessThan(sim.halfWidth + 0.003 * exact);
    }
  });

  it('stops at the time budget when the tolerance cannot be met, and says so', () => {
    const sim = simulateWithConfidence(three(6), { relTolerance: 1e-9, budgetMs: 200, replicationMs: 20_000 });
    expect(sim.metTolerance).toBe(false);
    expect(sim.replications).toBeGreaterThanOrEqual(8);
    expect(sim.relHalfWidth).toBeGreaterThan(0);
  });
});
