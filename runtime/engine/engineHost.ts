// What an engine is built from and what it shares with the engines beside it in one process.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import type { EngineLink } from './messages.ts';

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

/** What an engine shares with the engines beside it in one process. */
export interface EngineHost {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  /** false: a request that leaves drops its state here (standard serving). */
  readonly retainState: boolean;
  readonly trace: TraceSink | undefined;
  readonly link: EngineLink;
  nextBatchId(): number;
  /** Results are being applied: hold wake-ups until the wave ends. */
  waveStart(): void;
  /** Results applied and the batch is over. */
  waveEnd(): void;
}

