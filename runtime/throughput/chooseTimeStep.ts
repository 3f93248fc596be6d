// Picks the DTMC time step Δ and rounds every batch latency to a whole number of steps.
//
// Δ = L_min / k for the smallest k ≥ MIN_STEPS whose worst relative rounding error is ≤ errorTarget.
// Why this rule: the chain is exact when every latency is a multiple of Δ (events then fall on the
// lattice), so the only modelling error is rounding; its size bounds the throughput error to first
// order. A smaller Δ costs states (≈ linearly for two models, quadratically for three), so we take
// the coarsest Δ that meets the target rather than a fixed fine one.
import { ThroughputError } from './ThroughputError.ts';

export interface TimeStep {
  dtMs: number;
  /** steps[i][b] = max(1, round(latency[i][b] / Δ)); index 0 unused. */
  steps: number[][];
  /** Worst |steps·Δ − latency| / latency. */
  maxRelError: number;
}

/** The shortest batch must span at least this many steps, so sub-step jitter cannot reorder events much. */
export const MIN_STEPS = 4;
const MAX_STEPS = 24;

export function roundLatencies(latencyMs: readonly (readonly number[])[], dtMs: number): TimeStep {
  if (!Number.isFinite(dtMs) || dtMs <= 0) {
    throw new ThroughputError('INVALID_INPUT', `dtMs must be a positive number, got ${dtMs}`);
  }
  let maxRelError = 0;
  const steps = latencyMs.map((row) =>
    row.map((ms, b) => {
      if (b === 0) return 0;
      const d = Math.max(1, Math.round(ms / dtMs));
      maxRelError = Math.max(maxRelError, Math.abs(d * dtMs - ms) / ms);
      return d;
    }),
  );
  return { dtMs, steps, maxRelError };
}

export function chooseTimeStep(latencyMs: readonly (readonly number[])[], errorTarget = 0.01): TimeStep {
  let lmin = Infinity;
  for (const row of latencyMs) for (let b = 1; b < row.length; b++) lmin = Math.min(lmin, row[b]);
  let best: TimeStep | undefined;
  for (let k = MIN_STEPS; k <= MAX_STEPS; k++) {
    const ts = roundLatencies(latencyMs, lmin / k);
    if (ts.maxRelError <= errorTarget) return ts;
    if (!best || ts.maxRelError < best.maxRelError - 1e-12) best = ts;
  }
  return best as TimeStep;
}
