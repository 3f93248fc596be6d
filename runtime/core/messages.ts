// What crosses between the entry and the engines, and from engine to engine: one module for every message.
import type { Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { RequestCounters, RequestSpec } from './localRequest.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { LaneStats, TextState, WireArrival } from '../../shared/protocol/engineProtocol.ts';

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
  /** The request's text so far, when its output is detokenised: the receiver continues it. */
  readonly text?: TextState;
}

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

/** One committed token, engine to entry. */
export interface Commit {
  readonly type: 'commit';
  readonly requestId: string;
  /** Its place in the output (0 = the first token after the prompt): the entry applies commits in this order. */
  readonly index: number;
  readonly token: number;
  readonly model: ModelId;
  /** Absent when it crossed a port for a request that does not read them (spec.detail). */
  readonly signals: TokenSignals | undefined;
  /** Committed at a handoff (kept by `send`) rather than by staying. */
  readonly atHandoff: boolean;
  /** The text this token lets the client see now ('' while held back, or when the request is not detokenised). */
  readonly text: string;
}

/** The request ended on an engine (EOS, length, a failure); the entry releases it everywhere. */
export interface Finish {
  readonly type: 'finish';
  readonly requestId: string;
  readonly status: 'done' | 'failed';
  readonly reason: FinishReason;
  readonly error?: Error;
  readonly counters?: RequestCounters;
  /** Output tokens committed before it; the entry waits for them (absent: end at once). */
  readonly committed?: number;
  /** Text held back until the end (a forming stop string, an incomplete character). */
  readonly text?: string;
}

/** The request left for model `to` (its `hops`-th handoff): the entry knows which engine holds it without asking. */
export interface Moved {
  readonly type: 'moved';
  readonly requestId: string;
  readonly to: string;
  readonly hops: number;
}

/** What an engine tells the entry about its requests, in order. */
export type EngineEvent = Commit | Finish | Moved;

/**
 * What an engine produced, as data (vLLM's EngineCoreOutputs): per request its committed tokens,
 * finish and handoff as events for the entry, in order, and the handoffs themselves for the peers.
 */
export interface EngineOutputs {
  readonly events: EngineEvent[];
  readonly sent: { readonly to: string; readonly arrival: Arrival }[];
}

/** What one landed batch or handled call of an engine produced, for the entry: its events in order, trace events, its lane, batches it finished. */
export interface EngineReport {
  readonly events: readonly EngineEvent[];
  readonly trace: readonly TraceEvent[];
  /** Absent when the entry shares the engine's thread and reads the lane itself. */
  readonly lane?: LaneStats;
  readonly returned: number;
}

/** Where an engine host's outputs go: the entry (reports, handoffs to engines it has no link to), whatever carries them. */
export interface EngineOutlet {
  /**
   * The entry shares this thread: it answers within `report` (admits the next request, releases
   * one), so it is heard before the engine decides to launch, and it reads the lane itself.
   */
  readonly inProcess: boolean;
  report(r: EngineReport): void;
  /** Handoffs to model `to`'s engine, to which this one has no link of its own: the entry passes them on. */
  viaEntry(to: string, arrivals: readonly Arrival[]): void;
}

/** A link from one engine host straight to a peer's. */
export interface PeerLink {
  arrive(arrivals: readonly Arrival[]): void;
  close(): void;
}

/** What the entry hears from its engines, whatever carries it. */
export interface EngineEntry {
  /** Runs what one message from the engines sets off as one cascade: the engines in the entry's thread launch only once it is over. */
  cascade<T>(fn: () => T): T;
  commit(c: Commit): void;
  finish(f: Finish): void;
  /** The engine handed a request to model `to` (its `hops`-th handoff). */
  moved(requestId: string, to: string, hops: number): void;
  /** A handoff from an engine to one it has no link to: the entry passes it on. */
  deliver(to: string, a: Arrival): void;
  /** The same from an engine across a port: the entry puts its own spec (with the algorithm it built) back on each. */
  deliverWire(to: string, arrivals: readonly WireArrival[]): void;
  traced(events: readonly TraceEvent[]): void;
  /** A report was applied; `returned`: batches the engine finished since it last said (a sync barrier counts them). */
  reported(returned: number): void;
  /** A batch and all it set off in the entry's thread are over (engines in this process): the debug checks run here. */
  settled?(): void;
  /** Where a live request decodes, as the entry heard from the `moved` events: a remote model's recompute reads it. */
  whereabouts?(requestId: string): { readonly model: string; readonly hops: number } | undefined;
  /** The committed sequence the entry holds of a live request (prompt, then the output in order): a remote model's recompute reads it. */
  sequence?(requestId: string): readonly number[] | undefined;
}

// --- across a thread boundary (shared/protocol/engineProtocol.ts): the algorithm goes by key, errors as data ---

export type {
  CommitColumns,
  EngineSettings,
  FromEngine,
  LaneStats,
  PortLike,
  ToEngine,
  ToPeer,
  WireArrival,
  WireError,
  WireEvent,
} from '../../shared/protocol/engineProtocol.ts';
