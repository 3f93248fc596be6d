// The engine protocol, defined once: what crosses between the entry and its engines, and from engine to engine, on a wire or in one thread.
import { z } from 'zod';
import type { Algorithm, Handoff } from '../algorithm.ts';
import { traceEventSchema, type TraceEvent } from '../trace.ts';
import { constraintSchema } from './constraint.ts';
import { controlFromEngine, controlToEngine, list } from './engineControl.ts';
import { laneStatsSchema, type LaneStats } from './laneStats.ts';
import { samplingSchema, signalsSchema } from './runnerProtocol.ts';

const int = z.number().int();
const tokens = list(int);

/** A request's fixed facts, its algorithm by key (the engine built it from a `deploy`). */
const wireSpecSchema = z.object({
  id: z.string(),
  serial: int,
  algorithm: z.string(),
  models: list(z.string()),
  promptLength: int,
  maxLength: int,
  minTokens: int,
  sampling: samplingSchema,
  drawSeed: z.number(),
  /** Present: the engines detokenise its output and end it at the first stop string (from `minTokens` tokens on). */
  text: z.object({ stop: list(z.string()) }).optional(),
  /** The entry reads each token's signals (per-token detail, logprobs), so they cross ports. */
  detail: z.boolean().optional(),
  constraint: constraintSchema.optional(),
});

/** A request's detokenising as it stands (the output processor, runtime/core/localRequest.ts): it travels with every handoff. */
const textStateSchema = z.object({
  detok: z.object({ ids: z.array(int), read: int, prefixText: z.string() }),
  count: int,
  /** The output text from character `tailAt` on: as far back as a stop string can reach. */
  tail: z.string(),
  tailAt: int,
  /** Characters the client has been given. */
  emitted: int,
  /** Where the first stop string begins; -1: none yet. */
  stopAt: int,
});

const handoffSchema = z.object({
  type: z.literal('handoff'),
  requestId: z.string(),
  from: int,
  to: int,
  anchor: int,
  tokens,
  keep: z.boolean(),
  done: z.boolean(),
  meta: z.unknown(),
});

/** Per-request tallies by model id, counted into by the engine that owns the request; `cachedPrompt`: the entry model's prefix-cache hit. */
const countersSchema = z.object({ handoffs: int, discarded: int, admissions: z.array(int), tokensFed: z.array(int), cachedPrompt: int.default(0) });

/** A request arriving at an engine: the unseen suffix, what each model has seen, the owner's tallies; never KV. */
const wireArrivalSchema = z.object({
  spec: wireSpecSchema,
  handoff: handoffSchema,
  known: z.array(int),
  counters: countersSchema,
  /** The whole committed sequence, when the receiver may hold no state (standard serving, a replica re-placed). */
  context: tokens.optional(),
  /** Over NATS: per model, the replica that holds the request's state, so a return goes home. */
  homes: z.record(z.string(), z.string()).optional(),
  text: textStateSchema.optional(),
});

const wireErrorSchema = z.object({ code: z.string(), message: z.string(), param: z.string().nullable() });

/** What an engine tells the entry of a request, in order, as it crosses a port. */
const wireEventSchema = z.discriminatedUnion('type', [
  /** One committed token; `signals` only for a request that reads them (spec.detail), without the hidden state. */
  z.object({
    type: z.literal('commit'),
    requestId: z.string(),
    /** Its place in the output (0 = the first token after the prompt): the entry applies commits in this order. */
    index: int,
    token: int,
    model: int,
    signals: signalsSchema.optional(),
    /** Kept by `send` at a handoff. */
    atHandoff: z.boolean(),
    /** The text the client may see now ('' while held back, or when the request is not detokenised). */
    text: z.string(),
  }),
  z.object({
    type: z.literal('finish'),
    requestId: z.string(),
    status: z.enum(['done', 'failed']),
    reason: z.enum(['stop', 'length', 'cancelled', 'error']),
    error: wireErrorSchema.optional(),
    counters: countersSchema.optional(),
    /** Output tokens committed before it: the entry waits for them. */
    committed: int.optional(),
    /** The text held back until the end (a forming stop string, an incomplete character). */
    text: z.string().optional(),
  }),
  /** The request left for model `to` (`replica`: the remote replica it went to), so the entry knows where it is without asking. */
  z.object({ type: z.literal('moved'), requestId: z.string(), to: z.string(), hops: int, replica: z.string().optional() }),
]);

const algorithmSourceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('builtin'), factory: z.string(), params: z.record(z.string(), z.unknown()).optional() }),
  z.object({ kind: z.literal('ir'), ir: z.unknown() }),
  z.object({ kind: z.literal('single'), model: z.string() }),
  z.object({ kind: z.literal('module'), module: z.string(), export: z.string(), args: list(z.unknown()).optional() }),
]);

const algorithmRefSchema = z.object({
  key: z.string(),
  source: algorithmSourceSchema,
  catalog: list(z.object({ name: z.string(), heads: list(z.string()), vocabSize: int.optional() })).optional(),
});

/** Entry → engine: an algorithm before its first request, the requests of one turn of the entry's event loop (admitted in one step), releases. */
export const toEngineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('deploy'), ref: algorithmRefSchema }),
  z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) }),
  z.object({ type: z.literal('release'), id: z.string(), serial: int, status: z.enum(['done', 'failed', 'cancelled']) }),
  ...controlToEngine,
]);

/** Engine → engine: a step's handoffs to this peer, together. */
export const toPeerSchema = z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) });

/** Engine → entry: one `step` message per step, its commits and events in order, the trace, the lane. */
export const fromEngineSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('step'),
    events: list(wireEventSchema),
    trace: list(traceEventSchema),
    lane: laneStatsSchema,
    returned: int,
  }),
  /** Handoffs to a model this engine has no link to: the entry passes them on. */
  z.object({ type: z.literal('deliver'), to: z.string(), arrivals: list(wireArrivalSchema) }),
  ...controlFromEngine,
]);

export type WireSpec = z.infer<typeof wireSpecSchema>;
export type RequestCounters = z.infer<typeof countersSchema>;
export type WireArrival = z.infer<typeof wireArrivalSchema>;
export type WireError = z.infer<typeof wireErrorSchema>;
export type WireEvent = z.infer<typeof wireEventSchema>;
export type TextState = z.infer<typeof textStateSchema>;
export type ToEngine = z.infer<typeof toEngineSchema>;
export type ToPeer = z.infer<typeof toPeerSchema>;
export type FromEngine = z.infer<typeof fromEngineSchema>;
export type AlgorithmRef = z.infer<typeof algorithmRefSchema>;
export type { EngineSettings, PortLike } from './engineControl.ts';
export type { LaneStats } from './laneStats.ts';

// In one thread the same messages travel as they are, with live objects: the algorithm itself, an Error.

/** What never changes about a request once submitted, every engine it visits reads the same: the wire spec with the algorithm itself. */
export type RequestSpec = Readonly<Omit<WireSpec, 'algorithm'>> & {
  readonly algorithm: Algorithm<unknown>;
  /** The algorithm by reference, for engines in other threads (absent: in-process engines only). */
  readonly ref?: AlgorithmRef;
};

/** A request arriving at an engine, from the entry (`handoff.from` 0, its tokens the prompt) or a peer: the wire's, with its algorithm built. */
export type Arrival = Readonly<Omit<WireArrival, 'spec' | 'handoff' | 'homes'>> & { readonly spec: RequestSpec; readonly handoff: Handoff<unknown> };

/** The request ended on an engine (EOS, length, a failure); the entry releases it everywhere. */
export type Finish = Readonly<Omit<Extract<WireEvent, { type: 'finish' }>, 'error'>> & { readonly error?: Error };
export type FinishReason = Finish['reason'];

/** The request left for model `to` (its `hops`-th handoff). */
export type Moved = Readonly<Omit<Extract<WireEvent, { type: 'moved' }>, 'replica'>>;

/** One committed token, engine to entry. */
export type Commit = Readonly<Extract<WireEvent, { type: 'commit' }>>;

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
