// Validates a ThroughputInput once at the boundary and turns it into dense arrays the chain builder trusts.
import { checkFeasible } from './checkFeasible.ts';
import { ThroughputError } from './ThroughputError.ts';
import type { LatencySpec, Matrix, ThroughputInput } from './types.ts';

export interface NormalisedModel {
  K: number;
  N: number;
  P: number[][];
  C: number[][];
  /** min(maxBatch_i, N): larger batches can never form in a closed system of N requests. */
  maxBatch: number[];
  thresholds: number[];
  /** latencyMs[i][b] for b = 1..maxBatch[i]; index 0 unused (NaN). */
  latencyMs: number[][];
  /** The same for a batch launched while another model runs (latencyMs itself when not given). */
  contendedMs: number[][];
  /** Expected tokens committed by one request-step on i: Σ_j P[i][j]·C[i][j]. */
  commitPerStep: number[];
}

const ROW_SUM_TOL = 1e-9;

function checkMatrix(name: string, m: Matrix, K: number, probabilities: boolean): number[][] {
  if (m.length !== K) throw new ThroughputError('INVALID_INPUT', `${name} must have ${K} rows`, { rows: m.length });
  return m.map((row, i) => {
    if (row.length !== K) {
      throw new ThroughputError('INVALID_INPUT', `${name}[${i}] must have ${K} entries`, { row: i });
    }
    let sum = 0;
    for (const v of row) {
      if (!Number.isFinite(v) || v < 0) {
        throw new ThroughputError('INVALID_INPUT', `${name}[${i}] has a negative or non-finite entry`, { row: i });
      }
      sum += v;
    }
    if (probabilities && Math.abs(sum - 1) > ROW_SUM_TOL) {
      throw new ThroughputError('INVALID_INPUT', `P[${i}] sums to ${sum}, not 1`, { row: i, sum });
    }
    return probabilities ? row.map((v) => v / sum) : [...row];
  });
}

export function latencyTable(spec: LatencySpec, maxBatch: readonly number[]): number[][] {
  return maxBatch.map((B, i) => {
    const out = [NaN];
    for (let b = 1; b <= B; b++) {
      let ms: number | undefined;
      if (typeof spec === 'function') ms = spec(i, b);
      else ms = spec[i]?.[b - 1];
      if (ms === undefined || !Number.isFinite(ms) || ms <= 0) {
        throw new ThroughputError('INVALID_INPUT', `latency of model ${i} at batch ${b} must be a positive number`, {
          model: i,
          batch: b,
          ms,
        });
      }
      out.push(ms);
    }
    return out;
  });
}

export function normaliseInput(input: ThroughputInput): NormalisedModel {
  const { N } = input;
  const K = input.maxBatch.length;
  if (K < 1) throw new ThroughputError('INVALID_INPUT', 'need at least one model');
  if (input.thresholds.length !== K) {
    throw new ThroughputError('INVALID_INPUT', `thresholds must have ${K} entries (one per model)`);
  }
  for (const [i, B] of input.maxBatch.entries()) {
    if (!Number.isInteger(B) || B < 1) {
      throw new ThroughputError('INVALID_INPUT', `maxBatch[${i}] must be an integer ≥ 1`, { model: i, B });
    }
  }
  checkFeasible(input.thresholds, N, input.maxBatch);
  const P = checkMatrix('P', input.P, K, true);
  const C = checkMatrix('C', input.C, K, false);
  const maxBatch = input.maxBatch.map((B) => Math.min(B, N));
  // A threshold above N can never be met; checkFeasible already rules it out (T−1 < N).
  const latencyMs = latencyTable(input.latency, maxBatch);
  const contendedMs = input.contendedLatency === undefined ? latencyMs : latencyTable(input.contendedLatency, maxBatch);
  const commitPerStep = P.map((row, i) => row.reduce((s, p, j) => s + p * C[i][j], 0));
  return { K, N, P, C, maxBatch, thresholds: [...input.thresholds], latencyMs, contendedMs, commitPerStep };
}
