// What crosses between the entry and the engines, and from engine to engine: one module for every message.
import type { Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { FinishReason } from './requestState.ts';
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

/** One committed token, engine to entry. */
export interface Commit {
  readonly requestId: string;
  readonly token: number;
  readonly model: ModelId;
  readonly signals: TokenSignals;
  /** Committed at a handoff (kept by `send`) rather than by staying. */
  readonly atHandoff: boolean;
}

/** The request ended on an engine (EOS, length, a failure); the entry releases it everywhere. */
export interface Finish {
  readonly requestId: string;
  readonly status: 'done' | 'failed';
  readonly reason: FinishReason;
  readonly error?: Error;
}

/** What an engine sends out: to the entry (commits, finishes) and to its peers (handoffs). */
export interface EngineLink {
  commit(c: Commit): void;
  finish(f: Finish): void;
  /** Engine to engine: delivers a handoff to the engine of model `name`. */
  deliver(name: string, a: Arrival): void;
}
