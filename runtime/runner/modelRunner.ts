// The model-runner contract: batched "feed these tokens, sample the next" steps over per-request KV caches.
import type { StepWants, TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, SamplingParams } from '../../shared/protocol/engineProtocol.ts';

export type { SamplingParams, SamplingPenalties, ModelInfo } from '../../shared/protocol/engineProtocol.ts';

export const GREEDY: SamplingParams = Object.freeze({ temperature: 0, topP: 1, topK: 0, seed: 0 });

/**
 * One request's share of a batched step. The runner appends `tokens` to the request's cache
 * (which must hold exactly `position` tokens: 0 = a fresh cache, so a prefill) and samples the
 * token at `position + tokens.length`.
 */
export interface StepRow {
  /** Cache handle, unique per live local request on this runner. */
  cacheId: number;
  /** Request id, for traces and for seeded draws in simulated runners. */
  requestId: string;
  tokens: readonly number[];
  position: number;
  sampling: SamplingParams;
  wants: StepWants;
}

export type StepPhase = 'prefill' | 'extend' | 'decode';

/** prefill: a fresh cache; extend: several tokens onto an existing cache; decode: one token. */
export function rowPhase(row: Pick<StepRow, 'position' | 'tokens'>): StepPhase {
  if (row.position === 0) return 'prefill';
  return row.tokens.length > 1 ? 'extend' : 'decode';
}

export interface StepOutput {
  /** One result per input row, same order. */
  rows: TokenSignals[];
  /**
   * For simulated runners: how long the step takes in clock time. The sub-server delivers the
   * result after this delay on its clock. Real runners leave it out and resolve when done.
   */
  durationMs?: number;
  /** Wall milliseconds spent inside the model itself (session.run or equivalent), for breakdowns. */
  modelMs?: number;
  /** The forward passes the step took (a mixed step may take two), for breakdowns of prefill against decode. */
  passes?: StepPass[];
}

/** One forward pass of a step: its rows, the tokens they fed, the longest feed, and its model ms. */
export interface StepPass {
  rows: number;
  tokens: number;
  longest: number;
  modelMs: number;
}

export interface ModelRunner {
  readonly info: ModelInfo;
  /** Runs one batched step. May answer synchronously (fake and simulated runners) or by promise. */
  step(rows: readonly StepRow[]): StepOutput | Promise<StepOutput>;
  /** Frees a request's cache. Never called while a step holding that cache is in flight. */
  release(cacheId: number): void;
  /**
   * Starts cache `target` (new, or replacing one the engine dropped) as a copy of the first `tokens`
   * tokens of cache `source`, which stays as it was: the target's first step then feeds at position
   * `tokens` (prefix caching). Neither cache is in a step in flight. False: this runner cannot (it
   * does not hold `source`, or cannot copy between its caches); the engine prefills instead.
   */
  fork(source: number, target: number, tokens: number): boolean;
  /** Stops workers and frees everything. */
  close?(): Promise<void>;
  /** Registers a callback for when the runner dies (a worker crash): every cache it held is gone. */
  onFailure?(listener: (error: Error) => void): void;
}
