// Shared input and output shapes of the throughput model (pure data, no behaviour).

/** Step latency in ms of one batch of `batch` requests on `model` (0-based model index). */
export type LatencyFn = (model: number, batch: number) => number;

/** A latency function, or a table `ms[model][batch - 1]` covering batch sizes 1..maxBatch[model]. */
export type LatencySpec = LatencyFn | readonly (readonly number[])[];

export type Matrix = readonly (readonly number[])[];

export interface ThroughputInput {
  /** Concurrency: requests in the closed system. */
  N: number;
  /** P[i][j]: probability that a step on i is followed by a step on j (rows sum to 1). */
  P: Matrix;
  /** C[i][j]: tokens committed by a step on i that is followed by j (discarded tokens commit 0). */
  C: Matrix;
  latency: LatencySpec;
  /**
   * Step latency of a batch launched while another model has a batch running (default: latency).
   * Where models share cores their steps slow each other down, which a function of the batch alone
   * cannot express; fit both with fitContendedLatency.
   */
  contendedLatency?: LatencySpec;
  maxBatch: readonly number[];
  /** Delayed-batching thresholds T_i, 1 ≤ T_i ≤ maxBatch_i, Σ(T_i − 1) < N. */
  thresholds: readonly number[];
  /** Time step Δ in ms; default chosen by chooseTimeStep. */
  dtMs?: number;
  /** With dtMs unset: the largest relative latency rounding error accepted on a lattice (default 0.005). */
  maxLatencyError?: number;
  /** How latencies become whole steps when dtMs is given (default 'nearest'); see chooseTimeStep. */
  rounding?: 'nearest' | 'split';
  /** Drop arrival outcomes less likely than this, renormalising (default 0 = exact chain). */
  pruneBelow?: number;
  /** Stop when ‖πP − π‖₁ falls below this (default 1e-10). */
  tolerance?: number;
  /** Accelerate Gauss–Seidel by aggregation over remaining-time vectors (default true). */
  aggregate?: boolean;
  /** Outer-iteration cap (default 20 000). */
  maxIterations?: number;
  /** Refuse to build chains larger than this (default 4 000 000 states). */
  maxStates?: number;
  /** Model whose queue holds all N requests at time 0 (default 0); only matters if the chain is reducible. */
  initialModel?: number;
}

export interface ThroughputResult {
  /** Committed tokens per second, the quantity the threshold optimiser maximises. */
  tokensPerSec: number;
  /** Mean size of the batches each model launches. */
  meanBatch: number[];
  /** Fraction of time each model has no batch running. */
  idleFraction: number[];
  /** 1 − idleFraction. */
  utilisation: number[];
  /** Batches launched per second, per model. */
  batchesPerSec: number[];
  /** Request-steps per second, per model (batchesPerSec · meanBatch). */
  stepsPerSec: number[];
  /** Time-averaged number of requests waiting in each model's ready queue. */
  meanQueue: number[];
  /** Time-averaged number of requests in each model's running batch (Σ meanQueue + meanInService = N). */
  meanInService: number[];
  /** The time step Δ actually used and the latencies it implies (ms, index [model][batch − 1]). */
  dtMs: number;
  rounding: 'nearest' | 'split';
  /** Mean latency the chain actually uses, ms, index [model][batch − 1]. */
  effectiveLatencyMs: number[][];
  /** Largest |mean rounded − true| / true over all latencies. */
  latencyRoundingError: number;
  /** Largest probability mass dropped from one event's outcomes by pruneBelow. */
  prunedMass: number;
  states: number;
  transitions: number;
  iterations: number;
  /** ‖πP − π‖₁ of the embedded chain at exit. */
  residual: number;
  converged: boolean;
  buildMs: number;
  solveMs: number;
}
