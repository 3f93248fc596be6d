// The model-runner contract: batched "feed these tokens, sample the next" steps over per-request KV caches.
import type { ModelInfo, SamplingParams, StepOutput, StepRow } from '../../shared/protocol/runnerProtocol.ts';
import type { Clock } from '../clock/clock.ts';

export type { ModelInfo, SamplingParams, SamplingPenalties, StepOutput, StepPass, StepRow } from '../../shared/protocol/runnerProtocol.ts';

export const GREEDY: SamplingParams = Object.freeze({ temperature: 0, topP: 1, topK: 0, seed: 0 });

/** prefill: a fresh cache; extend: several tokens onto an existing cache; decode: one token. */
export type StepPhase = 'prefill' | 'extend' | 'decode';

export interface ModelRunner {
  readonly info: ModelInfo;
  /**
   * Runs one batched step; the answer comes by promise (a real model) or by a thenable the
   * runner settles on its clock (a simulated one: see `useClock`). A throw is a failed step.
   */
  step(rows: readonly StepRow[]): PromiseLike<StepOutput>;
  /** A simulated runner answers after the step's simulated duration on this clock (the engine's). */
  useClock?(clock: Clock): void;
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
