// What crosses between the entry and the engines, and from engine to engine, in one thread: the wire's types with live objects.
import type { Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { RequestSpec } from './localRequest.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { WireArrival, WireEvent } from '../../shared/protocol/engineProtocol.ts';
import type { LaneStats } from '../../shared/protocol/laneStats.ts';

export type { EngineSettings, FromEngine, ToEngine, WireArrival } from '../../shared/protocol/engineProtocol.ts';
export type { LaneStats } from '../../shared/protocol/laneStats.ts';

/** A request arriving at an engine, from the entry (`handoff.from` 0, its tokens the prompt) or a peer: the wire's, with its algorithm built. */
export type Arrival = Readonly<Omit<WireArrival, 'spec' | 'handoff' | 'homes'>> & { readonly spec: RequestSpec; readonly handoff: Handoff<unknown> };

/** The request ended on an engine (EOS, length, a failure); the entry releases it everywhere. */
export type Finish = Readonly<Omit<Extract<WireEvent, { type: 'finish' }>, 'error'>> & { readonly error?: Error };
export type FinishReason = Finish['reason'];

/** The request left for model `to` (its `hops`-th handoff). */
export type Moved = Readonly<Omit<Extract<WireEvent, { type: 'moved' }>, 'replica'>>;

/** One committed token, engine to entry (across a port it travels in columns, commitColumnsSchema). */
export interface Commit {
  readonly type: 'commit';
  readonly requestId: string;
  /** Its place in the output (0 = the first token after the prompt): the entry applies commits in this order. */
  readonly index: number;
  readonly token: number;
  readonly model: ModelId;
  /** Absent when it crossed a port for a request that does not read them (spec.detail). */
  readonly signals: TokenSignals | undefined;
  /** Kept by `send` at a handoff. */
  readonly atHandoff: boolean;
  /** The text the client may see now ('' while held back, or when the request is not detokenised). */
  readonly text: string;
}

export type EngineEvent = Commit | Finish | Moved;

/** What an engine produced, as data (vLLM's EngineCoreOutputs): events for the entry in order, handoffs for the peers. */
export interface EngineOutputs {
  readonly events: EngineEvent[];
  readonly sent: { readonly to: string; readonly arrival: Arrival }[];
}

/** What one landed batch or handled call of an engine tells the entry. */
export interface EngineReport {
  readonly events: readonly EngineEvent[];
  readonly trace: readonly TraceEvent[];
  /** Absent when the entry shares the engine's thread and reads the lane itself. */
  readonly lane?: LaneStats;
  readonly returned: number;
}

/** Where an engine host's outputs go: the entry (reports, handoffs to engines it has no link to), whatever carries them. */
export interface EngineOutlet {
  /** The entry shares this thread: it answers within `report`, before the engine decides to launch, and reads the lane itself. */
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
  /** Runs what one message from the engines sets off as one cascade. */
  cascade<T>(fn: () => T): T;
  commit(c: Commit): void;
  finish(f: Finish): void;
  moved(requestId: string, to: string, hops: number): void;
  /** A handoff to an engine the sender has no link to: the entry passes it on. */
  deliver(to: string, a: Arrival): void;
  deliverWire(to: string, arrivals: readonly WireArrival[]): void;
  traced(events: readonly TraceEvent[]): void;
  /** A report was applied; `returned`: batches the engine finished since it last said (a sync barrier counts them). */
  reported(returned: number): void;
  /** A batch and all it set off in the entry's thread are over: the debug checks run here. */
  settled?(): void;
  /** Where a live request decodes (from the `moved` events), and its committed sequence: a remote model's recompute reads them. */
  whereabouts?(requestId: string): { readonly model: string; readonly hops: number } | undefined;
  sequence?(requestId: string): readonly number[] | undefined;
}
