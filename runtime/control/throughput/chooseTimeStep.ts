// Picks the DTMC time step Δ and turns every batch latency into whole steps.
//
// Two roundings. 'nearest': d = round(L/Δ); exact when every latency is a multiple of Δ (events then
// fall on the lattice, so the chain is the runtime's dynamics exactly) and otherwise biased by the
// rounding error. 'split': d = ⌊L/Δ⌋ or ⌊L/Δ⌋+1 with probabilities that make the mean exactly L/Δ;
// no bias in the mean, at the price of ≤ Δ of artificial jitter and up to two successors per launch.
// Auto: the coarsest Δ = L_min/k, k = 1…MAX_STEPS, whose nearest rounding is within errorTarget
// (default 0.5%). Coarse is safe here: on a lattice the chain is exact however big Δ is, and Δ
// itself costs nothing in the embedded chain — what costs states is the number of distinct
// remaining-time values, so the coarsest near-exact lattice is also the cheapest. If no k meets the
// target (batch-dependent latencies usually don't), 'split' at Δ = L_min/SPLIT_STEPS, where
// halving Δ moved the prediction by < 1% in our tests.
import type { NormalisedModel } from './normaliseInput.ts';
import { ThroughputError } from './ThroughputError.ts';
import type { ThroughputInput } from './types.ts';

export type Rounding = 'nearest' | 'split';

export interface TimeStep {
  dtMs: number;
  rounding: Rounding;
  /**
   * lo[i][b]: steps of a batch of b on row i (the shorter outcome under 'split'); index 0 unused.
   * From timeStepOf, rows 0..K−1 are each model alone and rows K..2K−1 the same models contended.
   */
  lo: number[][];
  /** hiProb[i][b]: probability the batch takes lo + 1 steps instead (0 under 'nearest'). */
  hiProb: number[][];
  /** Worst relative error of the mean latency in steps vs the true latency. */
  maxRelError: number;
}

const MAX_STEPS = 24;
const SPLIT_STEPS = 6;
const EPS = 1e-9;

export function roundLatencies(latencyMs: readonly (readonly number[])[], dtMs: number, rounding: Rounding): TimeStep {
  if (!Number.isFinite(dtMs) || dtMs <= 0) {
    throw new ThroughputError('INVALID_INPUT', `dtMs must be a positive number, got ${dtMs}`);
  }
  let maxRelError = 0;
  const lo: number[][] = [];
  const hiProb: number[][] = [];
  for (const row of latencyMs) {
    const l = [0];
    const h = [0];
    for (let b = 1; b < row.length; b++) {
      const x = row[b] / dtMs;
      let d: number;
      let ph = 0;
      if (rounding === 'nearest' || x < 1) {
        d = Math.max(1, Math.round(x));
      } else {
        d = Math.floor(x + EPS);
        ph = x - d;
        if (ph < EPS) ph = 0;
      }
      l.push(d);
      h.push(ph);
      maxRelError = Math.max(maxRelError, Math.abs((d + ph) * dtMs - row[b]) / row[b]);
    }
    lo.push(l);
    hiProb.push(h);
  }
  return { dtMs, rounding, lo, hiProb, maxRelError };
}

export function minLatency(latencyMs: readonly (readonly number[])[]): number {
  let lmin = Infinity;
  for (const row of latencyMs) for (let b = 1; b < row.length; b++) lmin = Math.min(lmin, row[b]);
  return lmin;
}

export function chooseTimeStep(latencyMs: readonly (readonly number[])[], errorTarget = 0.005): TimeStep {
  const lmin = minLatency(latencyMs);
  for (let k = 1; k <= MAX_STEPS; k++) {
    const ts = roundLatencies(latencyMs, lmin / k, 'nearest');
    if (ts.maxRelError <= errorTarget) return ts;
  }
  return roundLatencies(latencyMs, lmin / SPLIT_STEPS, 'split');
}

/** The model's time step: Δ as given or chosen, over both latency tables (alone, then contended). */
export function timeStepOf(
  m: Pick<NormalisedModel, 'latencyMs' | 'contendedMs'>,
  input: Pick<ThroughputInput, 'dtMs' | 'maxLatencyError' | 'rounding'>,
): TimeStep {
  const rows = [...m.latencyMs, ...m.contendedMs];
  return input.dtMs === undefined ? chooseTimeStep(rows, input.maxLatencyError) : roundLatencies(rows, input.dtMs, input.rounding ?? 'nearest');
}
