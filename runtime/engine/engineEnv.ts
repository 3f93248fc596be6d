// What an engine is built from, and what it reads from and tells the host that serves it.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import type { EngineOutputs } from './messages.ts';

export interface EngineOptions {
  name: string;
  runner: ModelRunner;
  maxBatch: number;
  /** Delayed-batching threshold T: launch when this many requests are ready (async-delayed). */
  threshold: number;
  /** Longest a ready request waits for the threshold, in clock ms; Infinity = none. */
  maxWaitMs: number;
  /** KV capacity in tokens; Infinity = unbounded. */
  kvCapacityTokens: number;
  /** Keep caches requests let go of, and start new caches from their longest prefix (default off). */
  prefixCache?: boolean;
}

/** The host as its engine sees it: the clock, its share of the launch policy, and the loop that ships a batch's outputs. */
export interface EngineEnv {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  /** false: a request that leaves drops its state here (standard serving). */
  readonly retainState: boolean;
  readonly trace: TraceSink | undefined;
  nextBatchId(): number;
  /** A batch came back and its results are applied: these are its outputs, to ship. */
  landed(out: EngineOutputs): void;
}
