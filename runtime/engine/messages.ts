// What crosses between the entry and the engines, and from engine to engine: one module for every message.
import type { MessagePort } from 'node:worker_threads';
import type { Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { ErrorCode } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { SchedulingMode } from '../scheduler/schedulingMode.ts';
import type { LaneStats } from './laneStats.ts';
import type { RequestCounters, RequestSpec } from './localRequest.ts';

/**
 * A request arriving at an engine: from the entry (first placement: `handoff.from` is 0 and its
 * tokens are the prompt) or from a peer engine. Routing state travels with it; KV never does.
 */
export interface Arrival {
  readonly spec: RequestSpec;
  readonly handoff: Handoff<unknown>;
  /** known[m] after the sender's view: how much of the sequence each model has seen. */
  readonly known: number[];
  readonly counters: RequestCounters;
  /** The whole committed sequence, sent when the receiver may hold no state (standard serving drops it at every handoff). */
  readonly context?: readonly number[];
}

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

/** One committed token, engine to entry. */
export interface Commit {
  readonly requestId: string;
  /** Its place in the output (0 = the first token after the prompt): the entry applies commits in this order. */
  readonly index: number;
  readonly token: number;
  readonly model: ModelId;
  readonly signals: TokenSignals;
  /** Committed at a handoff (kept by `send`) rather than by staying. */
  readonly atHandoff: boolean;
  /** The owner's tallies so far: what the entry reports if it ends the request itself. */
  readonly counters: RequestCounters;
}

/** The request ended on an engine (EOS, length, a failure); the entry releases it everywhere. */
export interface Finish {
  readonly requestId: string;
  readonly status: 'done' | 'failed';
  readonly reason: FinishReason;
  readonly error?: Error;
  readonly counters?: RequestCounters;
  /** Output tokens committed before it; the entry waits for them (absent: end at once). */
  readonly committed?: number;
}

/** What an engine sends out: to the entry (commits, finishes) and to its peers (handoffs). */
export interface EngineLink {
  commit(c: Commit): void;
  finish(f: Finish): void;
  /** Engine to engine: delivers a handoff to the engine of model `name`. */
  deliver(name: string, a: Arrival): void;
}

/** An engine as the entry drives it, wherever it runs (this thread or its own). */
export interface EngineClient {
  readonly index: number;
  readonly name: string;
  readonly info: ModelInfo;
  readonly maxBatch: number;
  readonly threshold: number;
  readonly down: boolean;
  /** The lane view a sync barrier reads (a thread engine's, as it last reported). */
  readonly readyCount: number;
  readonly newWork: number;
  readonly executing: boolean;
  arrive(a: Arrival): void;
  /** Drops what the engine holds of a request; its tallies when the engine can say them now (in-process). */
  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null;
  setThreshold(t: number): void;
  /** A sync barrier granted this engine a launch. */
  gate(): void;
  laneStats(): LaneStats;
}

// --- across a thread boundary: the algorithm goes by key, errors as data ---

export type WireSpec = Omit<RequestSpec, 'algorithm' | 'ref'> & { readonly algorithm: string };
export interface WireArrival extends Omit<Arrival, 'spec'> {
  readonly spec: WireSpec;
}
export interface WireError {
  code: ErrorCode;
  message: string;
  param: string | null;
}
export type WireEvent =
  | ({ type: 'commit' } & Commit)
  | ({ type: 'finish' } & Omit<Finish, 'error'> & { error?: WireError });

/** Fixed for an engine thread's life: what an in-process engine reads from the cluster it is in. */
export interface EngineSettings {
  index: number;
  /** Every model of the deployment, by index (batch ids are unique across them). */
  models: readonly string[];
  maxBatch: number;
  threshold: number;
  kvCapacityTokens: number;
  mode: SchedulingMode;
  retainState: boolean;
  maxWaitMs: number;
  lookahead: number;
  /** Clock origin of the entry (Clock.origin). */
  origin: number;
  trace: boolean;
  /** Debug mode: the engine checks its own invariants after every wave (checkEngine). */
  checkInvariants: boolean;
}

/** Entry → engine thread. */
export type ToEngine =
  | { type: 'begin'; settings: EngineSettings; peers: Record<string, MessagePort> }
  | { type: 'peer'; name: string; port: MessagePort }
  | { type: 'deploy'; ref: AlgorithmRef }
  | { type: 'arrive'; arrival: WireArrival }
  | { type: 'release'; id: string; serial: number; status: 'done' | 'failed' | 'cancelled' }
  | { type: 'threshold'; threshold: number }
  | { type: 'gate' }
  | { type: 'down'; down: boolean }
  | { type: 'close' }
  /** Test hook: the thread dies with an uncaught error, as a native crash would kill it. */
  | { type: 'crash'; message: string };

/** Engine thread → engine thread. */
export type ToPeer = { type: 'arrive'; arrivals: WireArrival[] };

/** Engine thread → entry. One `step` message per wave: every row's commits and finishes, in order. */
export type FromEngine =
  | { type: 'ready'; info: ModelInfo }
  | { type: 'load-error'; message: string }
  | { type: 'step'; events: WireEvent[]; trace: TraceEvent[]; lane: LaneStats & { newWork: number }; returned: number }
  /** A handoff to a model whose engine runs at the entry. */
  | { type: 'deliver'; to: string; arrivals: WireArrival[] }
  | { type: 'closed' };
