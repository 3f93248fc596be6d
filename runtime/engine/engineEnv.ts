// What an engine is built from, and what it reads from and tells the host that serves it.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import type { EngineOutputs, EngineSettings } from './messages.ts';
import type { OutputProcessor } from './outputProcessor.ts';
import type { EngineGrammar } from '../grammar/engineGrammar.ts';
import type { Arrival } from './messages.ts';

/** The engine's own settings, as its host received them (prefixCache may be left out by benches and tests: off). */
export type EngineOptions = { name: string; runner: ModelRunner } & Pick<EngineSettings, 'maxBatch' | 'maxStepTokens' | 'threshold' | 'maxWaitMs' | 'kvCapacityTokens'> & Partial<Pick<EngineSettings, 'prefixCache'>>;

/** The host as its engine sees it: the clock, its share of the launch policy, and the loop that ships a batch's outputs. */
export interface EngineEnv {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  readonly retainState: EngineSettings['retainState'];
  readonly trace: TraceSink | undefined;
  /** Detokenises the requests that ask for text; absent: no tokenizer beside this engine. */
  readonly output: OutputProcessor | undefined;
  /** Enforces constrained requests' grammars; absent: a constrained request fails here. */
  readonly grammar?: EngineGrammar;
  /** Runs the arrival again once `ready` settles (its grammar compiles meanwhile), unless the request ended first. */
  deferArrival?(ready: Promise<unknown>, a: Arrival): void;
  nextBatchId(): number;
  /** A batch came back and its results are applied: these are its outputs, to ship. */
  landed(out: EngineOutputs): void;
}
