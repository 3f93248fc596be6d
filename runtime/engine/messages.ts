// What crosses between the entry and the engines, and from engine to engine: one module for every message.
import type { Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
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
  readonly executing: boolean;
  arrive(a: Arrival): void;
  /** Drops what the engine holds of a request; its tallies when the engine can say them now (in-process). */
  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null;
  /** The delayed-batching threshold and max-wait deadline in force from now on. */
  setSchedule(threshold: number, maxWaitMs: number): void;
  /** A sync barrier granted this engine a launch. */
  gate(): void;
  /** The engine of model `name` restarted empty: requests decoding here re-send it their whole sequence. */
  peerLost(name: string): void;
  laneStats(): LaneStats;
}

// --- across a thread boundary (shared/protocol/engineProtocol.ts): the algorithm goes by key, errors as data ---

export type { EngineSettings, FromEngine, PortLike, ToEngine, ToPeer, WireArrival, WireError, WireEvent, WireSpec } from '../../shared/protocol/engineProtocol.ts';
