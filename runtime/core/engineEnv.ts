// What an engine is built from, and what it reads from and tells the host that serves it.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { EngineSettings } from './messages.ts';
import type { ServingPolicy } from './servingPolicy.ts';
import type { OutputProcessor } from './outputProcessor.ts';
import type { EngineGrammar } from '../grammar/engineGrammar.ts';
import type { Arrival } from './messages.ts';

/** The engine's own settings, as its host received them (prefixCache may be left out by benches and tests: off). */
export type EngineOptions = { name: string; runner: ModelRunner } & Pick<EngineSettings, 'maxBatch' | 'maxStepTokens' | 'threshold' | 'kvCapacityTokens'> &
  Partial<Pick<EngineSettings, 'prefixCache'>>;

/** The host as its engine sees it: the clock, the serving policy (whether a request's state stays behind a handoff), the loop's lane. */
export interface EngineEnv {
  readonly clock: Clock;
  readonly policy: Pick<ServingPolicy, 'retain'>;
  /** The loop that launches this engine's steps: its lane actor's state says whether one is in flight, or the engine is down. */
  readonly loop: { readonly executing: boolean; readonly down: boolean };
  readonly trace: TraceSink | undefined;
  /** Detokenises the requests that ask for text; absent: no tokenizer beside this engine. */
  readonly output: OutputProcessor | undefined;
  /** Enforces constrained requests' grammars; absent: a constrained request fails here. */
  readonly grammar?: EngineGrammar;
  /** Runs the arrival again once `ready` settles (its grammar compiles meanwhile), unless the request ended first. */
  deferArrival?(ready: Promise<unknown>, a: Arrival): void;
  nextBatchId(): number;
}
