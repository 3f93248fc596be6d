// What an engine is built from, and what it reads from and tells the host that serves it.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import type { Arrival, Commit, Finish } from './messages.ts';

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

/** The host as its engine sees it: the clock, its share of the launch policy, and where its results go. */
export interface EngineEnv {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  /** false: a request that leaves drops its state here (standard serving). */
  readonly retainState: boolean;
  readonly trace: TraceSink | undefined;
  nextBatchId(): number;
  /** A batch's results are being applied: hold the report until all of them are. */
  waveStart(): void;
  waveEnd(): void;
  commit(c: Commit): void;
  finish(f: Finish): void;
  /** Engine to engine: a handoff to the engine of model `name`. */
  deliver(name: string, a: Arrival): void;
}
