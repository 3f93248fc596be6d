// Committed tokens/sec by the exact-in-expectation method that fits a time budget.
//
// The embedded
// chain when its estimated size is affordable, else independent continuous-time Monte Carlo
// replications run until a 95 % confidence half-width meets a stated relative tolerance.
//
// Why not a coarser chain past the budget: coarsening Δ is not free of bias here. Batches that end
// within one slot are merged into a tie, and the tie rule (arrivals before launches) is exact only
// for real ties; measured on the three-model bench setting (5/12/25 ms), Δ = 2.5 ms ('nearest')
// read +1.0 % and Δ = 5 ms ('split') +2 % at N = 16 and +6 % at N = 32 — and the N = 32 chain at
// Δ = 5 ms still had 0.4 M states and 61 M transitions (the multinomial fan-out of a 32-request
// batch), 53 s to solve. The simulation has no time step at all: its only error is sampling noise,
// which it measures and bounds.
import { timeStepOf } from './chooseTimeStep.ts';
import { normaliseInput } from './normaliseInput.ts';
import { simulateThroughput } from './simulateThroughput.ts';
import { solveThroughput } from './solveThroughput.ts';
import type { ThroughputInput, ThroughputResult } from './types.ts';

export interface PredictOptions {
  /** 'auto' (default): the chain if estimateChainStates ≤ maxStates, else simulation. */
  method?: 'auto' | 'chain' | 'simulate';
  /** Chain size budget for 'auto' (default 600 000 estimated states: ≈ 3 s on this machine). */
  maxStates?: number;
  /** Target 95 % confidence half-width of the simulated mean, relative to it (default 0.0025). */
  relTolerance?: number;
  /** Stop adding replications after this much wall time even if the tolerance is not met (default 8000). */
  budgetMs?: number;
  /** Simulated time per replication after its warm-up, ms (default 250 000). */
  replicationMs?: number;
  /** Replications per round (default 8; the first round always runs in full). */
  replicationsPerRound?: number;
  /** Seed of the first replication; replication k uses seed + k. */
  seed?: number;
}

export interface SimulatedEstimate {
  replications: number;
  replicationMs: number;
  /** Per-replication committed tokens/sec. */
  samples: number[];
  /** 95 % confidence half-width of the mean (Student t), tokens/sec, and relative to the mean. */
  halfWidth: number;
  relHalfWidth: number;
  metTolerance: boolean;
}

export interface Prediction {
  tokensPerSec: number;
  method: 'chain' | 'simulate';
  /** Cheap a-priori size estimate of the exact chain (see estimateChainStates). */
  estimatedStates: number;
  chain: ThroughputResult | null;
  simulation: SimulatedEstimate | null;
  wallMs: number;
}

function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}

/**
 * A-priori estimate of the reachable embedded chain's size, without building it: (number of
 * remaining-time vectors Π_i maxSteps_i) × (number of (q_i, b_i) vectors summing to N, C(N+2K−1, 2K−1))
 * × 0.04. The factor is calibrated on the three-model 5/12/25 ms chain at thresholds 1, where
 * reachable / product was 4.0 %, 4.1 % and 3.9 % at N = 8, 12, 16 (2.6 % at N = 24; the estimate is
 * 1.8× high at N = 4); on R2R it reads 17–47 % low at N = 4…16. It ignores the thresholds, which
 * shrink the chain (three models, N = 8: 1/2/3 → 10× fewer states, 1/4/4 → 47×), so there it errs
 * towards simulating. Good for choosing a method, not for sizing buffers.
 */
export function estimateChainStates(input: ThroughputInput): number {
  const m = normaliseInput(input);
  const ts = timeStepOf(m, input);
  let phases = 1;
  for (let i = 0; i < m.K; i++) {
    let maxSteps = 1;
    for (const row of [i, i + m.K]) {
      for (let b = 1; b < ts.lo[row].length; b++) maxSteps = Math.max(maxSteps, ts.lo[row][b] + (ts.hiProb[row][b] > 0 ? 1 : 0));
    }
    phases *= maxSteps;
  }
  return Math.ceil(0.04 * phases * binomial(m.N + 2 * m.K - 1, 2 * m.K - 1));
}

/** Two-sided 95 % Student t quantile for df degrees of freedom. */
export function t975(df: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131];
  if (df <= table.length) return table[Math.max(1, df) - 1];
  if (df <= 30) return 2.042 + (2.131 - 2.042) * ((30 - df) / 15);
  return 1.96 + 2.4 / df;
}

export function simulateWithConfidence(input: ThroughputInput, opts: PredictOptions = {}): SimulatedEstimate {
  const tol = opts.relTolerance ?? 0.0025;
  const budgetMs = opts.budgetMs ?? 8000;
  const replicationMs = opts.replicationMs ?? 250_000;
  const perRound = Math.max(2, opts.replicationsPerRound ?? 8);
  const seed = opts.seed ?? 1;
  const t0 = performance.now();
  const samples: number[] = [];
  let halfWidth = Infinity;
  let mean = 0;
  for (;;) {
    for (let k = 0; k < perRound; k++) {
      samples.push(simulateThroughput(input, { horizonMs: replicationMs, seed: seed + samples.length }).tokensPerSec);
    }
    const n = samples.length;
    mean = samples.reduce((a, b) => a + b, 0) / n;
    const variance = samples.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
    halfWidth = t975(n - 1) * Math.sqrt(variance / n);
    const elapsed = performance.now() - t0;
    if (halfWidth <= tol * mean) break;
    // Next round only if it fits the budget at the pace so far.
    if (elapsed + (elapsed / n) * perRound > budgetMs) break;
  }
  return {
    replications: samples.length,
    replicationMs,
    samples,
    halfWidth,
    relHalfWidth: mean > 0 ? halfWidth / mean : Infinity,
    metTolerance: halfWidth <= tol * mean,
  };
}

export function predictThroughput(input: ThroughputInput, opts: PredictOptions = {}): Prediction {
  const t0 = performance.now();
  const estimatedStates = estimateChainStates(input);
  const method = opts.method ?? 'auto';
  const useChain = method === 'chain' || (method === 'auto' && estimatedStates <= (opts.maxStates ?? 600_000));
  if (useChain) {
    const chain = solveThroughput(input);
    return { tokensPerSec: chain.tokensPerSec, method: 'chain', estimatedStates, chain, simulation: null, wallMs: performance.now() - t0 };
  }
  const simulation = simulateWithConfidence(input, opts);
  const tokensPerSec = simulation.samples.reduce((a, b) => a + b, 0) / simulation.samples.length;
  return { tokensPerSec, method: 'simulate', estimatedStates, chain: null, simulation, wallMs: performance.now() - t0 };
}
