// Picks the feasible delayed-batching thresholds that maximise predicted committed tokens/sec.
import { countFeasible, feasibleThresholds, type FixedThresholds } from './feasibleThresholds.ts';
import { estimateChainStates, simulateWithConfidence, type PredictOptions } from './predictThroughput.ts';
import { solveThroughput } from './solveThroughput.ts';
import { ThroughputError } from './ThroughputError.ts';
import type { ThroughputInput, ThroughputResult } from './types.ts';

export type OptimiseInput = Omit<ThroughputInput, 'thresholds'>;

export interface OptimiseOptions {
  /** Thresholds to hold fixed, by model index (e.g. `{0: 1}` or `[1]` fixes the small model at 1). */
  fixed?: FixedThresholds;
  /** Above this many feasible vectors, search coordinate-wise instead of enumerating (default 400). */
  maxExhaustive?: number;
  /**
   * A candidate whose chain is estimated above this many states is evaluated by Monte Carlo
   * instead (default 600 000, a few seconds per chain here); Infinity = always the chain.
   */
  maxChainStates?: number;
  /** Simulation settings for those candidates; every candidate uses the same seeds, so their differences are not noise in the seeds. */
  simulation?: Pick<PredictOptions, 'relTolerance' | 'budgetMs' | 'replicationMs' | 'replicationsPerRound' | 'seed'>;
  /** After each candidate priced: how many so far, and of how many (undefined in a coordinate search, whose length is not known ahead). */
  onProgress?: (evaluated: number, of: number | undefined) => void;
}

export interface ThresholdRow {
  thresholds: number[];
  tokensPerSec: number;
  /** Chain rows only (a simulated row leaves them empty). */
  meanBatch: number[];
  idleFraction: number[];
  /** States of the solved chain; 0 for a simulated row. */
  states: number;
  method: 'chain' | 'simulate';
  /** Simulated rows: 95 % confidence half-width relative to the estimate. */
  relHalfWidth?: number;
}

export interface OptimiseResult {
  best: number[];
  predicted: number;
  /** Second-best vector evaluated, or null if only one was feasible. */
  runnerUp: { thresholds: number[]; predicted: number } | null;
  /** (best − runnerUp) / best: how decisive the choice is under the model (1 with no runner-up). */
  margin: number;
  /** Every evaluated vector, best first. */
  table: ThresholdRow[];
  /** True when every feasible vector was evaluated; false after a coordinate search (a local optimum). */
  exhaustive: boolean;
}

function chainRow(thresholds: number[], r: ThroughputResult): ThresholdRow {
  return { thresholds, tokensPerSec: r.tokensPerSec, meanBatch: r.meanBatch, idleFraction: r.idleFraction, states: r.states, method: 'chain' };
}

/** One candidate's prediction: the exact chain while it is affordable, else simulation with a stated error. */
export function evaluateThresholds(
  input: OptimiseInput,
  thresholds: number[],
  opts: Pick<OptimiseOptions, 'maxChainStates' | 'simulation'> = {},
): ThresholdRow {
  const full = { ...input, thresholds };
  if (estimateChainStates(full) <= (opts.maxChainStates ?? 600_000)) return chainRow(thresholds, solveThroughput(full));
  const sim = simulateWithConfidence(full, { relTolerance: 0.005, budgetMs: 2000, replicationMs: 100_000, ...opts.simulation });
  const mean = sim.samples.reduce((a, b) => a + b, 0) / sim.samples.length;
  return { thresholds, tokensPerSec: mean, meanBatch: [], idleFraction: [], states: 0, method: 'simulate', relHalfWidth: sim.relHalfWidth };
}

export function optimiseThresholds(input: OptimiseInput, opts: OptimiseOptions = {}): OptimiseResult {
  const { N, maxBatch } = input;
  const fixed = opts.fixed ?? {};
  const K = maxBatch.length;
  const evaluated = new Map<string, ThresholdRow>();
  const evaluate = (t: number[]): ThresholdRow => {
    const key = t.join(',');
    let r = evaluated.get(key);
    if (!r) {
      r = evaluateThresholds(input, t, opts);
      evaluated.set(key, r);
      opts.onProgress?.(evaluated.size, exhaustive ? total : undefined);
    }
    return r;
  };

  const total = countFeasible(maxBatch, N, fixed);
  if (total === 0) {
    throw new ThroughputError('NO_FEASIBLE_THRESHOLDS', `no feasible thresholds for N = ${N} with fixed ${JSON.stringify(fixed)}`);
  }
  const exhaustive = total <= (opts.maxExhaustive ?? 400);
  if (exhaustive) {
    for (const t of feasibleThresholds(maxBatch, N, fixed)) evaluate(t);
  } else {
    // Coordinate ascent from the all-ones corner (always feasible), one free model at a time.
    let cur = Array.from({ length: K }, (_, i) => fixed[i] ?? 1);
    let curVal = evaluate(cur).tokensPerSec;
    for (let improved = true; improved; ) {
      improved = false;
      for (let i = 0; i < K; i++) {
        if (fixed[i] !== undefined) continue;
        const slackOthers = cur.reduce((s, t, j) => (j === i ? s : s + t - 1), 0);
        const hi = Math.min(maxBatch[i], N, N - slackOthers);
        for (let t = 1; t <= hi; t++) {
          const cand = cur.slice();
          cand[i] = t;
          const v = evaluate(cand).tokensPerSec;
          if (v > curVal * (1 + 1e-12)) {
            cur = cand;
            curVal = v;
            improved = true;
          }
        }
      }
    }
  }
  const table = [...evaluated.values()].sort((a, b) => b.tokensPerSec - a.tokensPerSec);
  const [first, second] = table;
  return {
    best: first.thresholds,
    predicted: first.tokensPerSec,
    runnerUp: second ? { thresholds: second.thresholds, predicted: second.tokensPerSec } : null,
    margin: second ? (first.tokensPerSec - second.tokensPerSec) / first.tokensPerSec : 1,
    table,
    exhaustive,
  };
}

/** A vector's row: from the optimiser's table when it was evaluated there, else priced now (the thresholds in force, or all ones). */
export function rowFor(
  input: OptimiseInput,
  result: OptimiseResult,
  thresholds: readonly number[],
  opts: Pick<OptimiseOptions, 'maxChainStates' | 'simulation'> = {},
): ThresholdRow {
  const key = thresholds.join(',');
  return result.table.find((r) => r.thresholds.join(',') === key) ?? evaluateThresholds(input, [...thresholds], opts);
}
