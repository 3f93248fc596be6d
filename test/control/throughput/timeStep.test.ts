// The time step Δ must not matter: halving it moves predictions by well under 1.5%.
import { describe, expect, it } from 'vitest';
import { chooseTimeStep, roundLatencies, simulateThroughput, solveThroughput, type ThroughputInput } from '../../../runtime/control/throughput/index.ts';

const p = 0.35;
// Latencies on no common lattice, growing with batch size: the case where rounding can bite.
const offLattice: ThroughputInput = {
  N: 6,
  P: [
    [1 - p, p],
    [1, 0],
  ],
  C: [
    [1, 0],
    [1, 0],
  ],
  latency: (i, b) => (i === 0 ? 6 + 0.13 * (b - 1) : 27.9 + 0.71 * (b - 1)),
  maxBatch: [6, 6],
  thresholds: [1, 2],
};

const rel = (a: number, b: number) => Math.abs(a - b) / b;

describe('time step Δ', () => {
  it('auto choice: coarsest near-exact lattice, else mean-preserving split', () => {
    const onLattice = chooseTimeStep([
      [NaN, 6],
      [NaN, 27.9],
    ]);
    expect(onLattice.rounding).toBe('nearest');
    expect(onLattice.dtMs).toBe(2); // 6 = 3·2, 27.9 ≈ 14·2 (0.36 %)
    expect(onLattice.maxRelError).toBeLessThanOrEqual(0.005);
    const split = roundLatencies([[NaN, 6.3]], 1, 'split');
    expect(split.lo[0][1]).toBe(6);
    expect(split.hiProb[0][1]).toBeCloseTo(0.3, 12);
    expect(split.maxRelError).toBeLessThan(1e-12);
  });

  it('halving Δ changes the prediction by < 1.5% (split rounding, off-lattice latencies)', () => {
    const auto = solveThroughput(offLattice);
    expect(auto.rounding).toBe('split');
    const half = solveThroughput({ ...offLattice, dtMs: auto.dtMs / 2, rounding: 'split' });
    const quarter = solveThroughput({ ...offLattice, dtMs: auto.dtMs / 4, rounding: 'split' });
    expect(rel(half.tokensPerSec, auto.tokensPerSec)).toBeLessThan(0.015);
    expect(rel(quarter.tokensPerSec, half.tokensPerSec)).toBeLessThan(0.015);
    for (let i = 0; i < 2; i++) expect(Math.abs(half.idleFraction[i] - auto.idleFraction[i])).toBeLessThan(0.02);
  });

  it('halving Δ changes the prediction by < 1.5% (nearest rounding)', () => {
    const a = solveThroughput({ ...offLattice, dtMs: 0.5, rounding: 'nearest' });
    const b = solveThroughput({ ...offLattice, dtMs: 0.25, rounding: 'nearest' });
    expect(rel(a.tokensPerSec, b.tokensPerSec)).toBeLessThan(0.015);
  });

  it('on an exact lattice a finer Δ is the same chain, and both agree with continuous time', () => {
    const x: ThroughputInput = { ...offLattice, latency: (i) => (i === 0 ? 6 : 28) };
    const a = solveThroughput({ ...x, dtMs: 2 });
    const b = solveThroughput({ ...x, dtMs: 1 });
    expect(b.tokensPerSec).toBeCloseTo(a.tokensPerSec, 6);
  });

  it('the chain agrees with a continuous-time Monte Carlo of the same system within 1%', () => {
    const chain = solveThroughput(offLattice);
    const sim = simulateThroughput(offLattice, { horizonMs: 1_000_000, seed: 11 });
    expect(rel(chain.tokensPerSec, sim.tokensPerSec)).toBeLessThan(0.01);
    for (let i = 0; i < 2; i++) expect(Math.abs(chain.meanBatch[i] - sim.meanBatch[i])).toBeLessThan(0.05);
  });
});
