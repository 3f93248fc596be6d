// Monte Carlo of the closed delayed-batching system: an independent check of the chain.
//
// Monte Carlo of the same closed delayed-batching system in continuous time: an independent check
// of the chain (no time step, no rounding), used by the tests and handy for chains too big to solve.
import { normaliseInput } from './normaliseInput.ts';
import type { ThroughputInput } from './types.ts';
import { mulberry32 } from '../../../shared/rng.ts';

/** Batches ending within 1 ns end together (float sums of latencies drift by far less). */
const TIE_MS = 1e-6;

export interface SimulationOptions {
  /** Simulated time measured after warm-up, ms. */
  horizonMs: number;
  warmupMs?: number;
  seed?: number;
}

export interface SimulationResult {
  tokensPerSec: number;
  meanBatch: number[];
  idleFraction: number[];
  batches: number[];
}

export function simulateThroughput(input: ThroughputInput, opts: SimulationOptions): SimulationResult {
  const m = normaliseInput(input);
  const { K, N, P, C, maxBatch, thresholds, latencyMs, contendedMs } = m;
  const rand = mulberry32(opts.seed ?? 1);
  const warm = opts.warmupMs ?? opts.horizonMs / 10;
  const end = warm + opts.horizonMs;
  const q = new Array<number>(K).fill(0);
  const b = new Array<number>(K).fill(0);
  const finish = new Array<number>(K).fill(Infinity);
  q[input.initialModel ?? 0] = N;
  let tokens = 0;
  const idle = new Array<number>(K).fill(0);
  const batches = new Array<number>(K).fill(0);
  const steps = new Array<number>(K).fill(0);
  let now = 0;

  const launched = new Int32Array(K);
  const launch = (): void => {
    let n = 0;
    let running = 0;
    for (let i = 0; i < K; i++) {
      if (b[i] === 0 && q[i] >= thresholds[i]) {
        b[i] = Math.min(q[i], maxBatch[i]);
        q[i] -= b[i];
        launched[n++] = i;
      }
      if (b[i] > 0) running++;
    }
    // As in the chain: contended when another model has a batch running once this instant's launches are made.
    const table = running > 1 ? contendedMs : latencyMs;
    for (let k = 0; k < n; k++) finish[launched[k]] = now + table[launched[k]][b[launched[k]]];
  };
  launch();
  while (now < end) {
    let t = Infinity;
    for (let i = 0; i < K; i++) t = Math.min(t, finish[i]);
    const to = Math.min(t, end);
    // Accumulate idle time over [now, to) for the measured window only.
    const from = Math.max(now, warm);
    if (to > from) for (let i = 0; i < K; i++) if (b[i] === 0) idle[i] += to - from;
    now = t;
    if (now >= end) break;
    const arrivals = new Array<number>(K).fill(0);
    for (let i = 0; i < K; i++) {
      if (b[i] === 0 || finish[i] > now + TIE_MS) continue;
      const measured = now >= warm;
      if (measured) {
        batches[i]++;
        steps[i] += b[i];
      }
      for (let n = 0; n < b[i]; n++) {
        let u = rand();
        let j = 0;
        while (j < K - 1 && u >= P[i][j]) u -= P[i][j++];
        arrivals[j]++;
        if (measured) tokens += C[i][j];
      }
      b[i] = 0;
      finish[i] = Infinity;
    }
    for (let j = 0; j < K; j++) q[j] += arrivals[j];
    launch();
  }
  const perSec = 1000 / opts.horizonMs;
  return {
    tokensPerSec: tokens * perSec,
    meanBatch: batches.map((n, i) => (n > 0 ? steps[i] / n : 0)),
    idleFraction: idle.map((x) => x / opts.horizonMs),
    batches,
  };
}
