// The engine protocol, defined once: what crosses between the entry and its engines, and from engine to engine.
import { z } from 'zod';
import { traceEventSchema } from '../trace.ts';
import { constraintSchema } from './constraint.ts';
import { laneStatsSchema } from './laneStats.ts';
import { modelInfoSchema, samplingSchema, signalsSchema } from './runnerProtocol.ts';

const int = z.number().int();
/** Any number but NaN: capacities and deadlines may be Infinity (unbounded), which z.number() refuses. */
export const amount = z.custom<number>((v) => typeof v === 'number' && !Number.isNaN(v), 'a number');
export const list = <T extends z.ZodType>(item: T) => z.array(item).readonly();
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
  samplingBelowMin: samplingSchema,
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

/** What crosses a port besides commits (those travel as columns). */
const wireEventSchema = z.discriminatedUnion('type', [
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

/**
 * A step's commits in columns, row i the i-th commit: one transferred Int32Array (`index`, `token`, `model`, `atHandoff`,
 * `textEnd`, one column after the other), the text deltas joined, signals only for rows whose request reads them (spec.detail).
 */
const commitColumnsSchema = z.object({
  ids: list(z.string()),
  columns: z.custom<Int32Array>((v) => v instanceof Int32Array, 'an Int32Array'),
  text: z.string(),
  signals: list(z.tuple([int, signalsSchema])),
});
export const COMMIT_COLUMNS = 5;

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

/** The scheduling modes (runtime/core/servingPolicy.ts explains them); the config schema and the engine wire share this one list. */
export const SCHEDULING_MODES = ['step-sync', 'model-sync', 'async-immediate', 'async-delayed'] as const;

/**
 * What an engine begins with: the config's settings under their config names, plus what the entry
 * adds. `amount`s may be Infinity (no bound); `retainState: false` is standard serving.
 */
const engineSettingsSchema = z.object({
  index: int,
  models: list(z.string()),
  maxBatch: int,
  maxStepTokens: amount,
  threshold: int,
  kvCapacityTokens: amount,
  mode: z.enum(SCHEDULING_MODES),
  retainState: z.boolean(),
  maxWaitMs: amount,
  prefixCache: z.boolean(),
  origin: z.number(),
  trace: z.boolean(),
  checkInvariants: z.boolean(),
});

/** What the protocol uses of a MessagePort (one moves with the message that names it). */
export interface PortLike {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  close(): void;
}
const portSchema = z.custom<PortLike>((p) => typeof p === 'object' && p !== null && 'postMessage' in p && 'close' in p, 'a MessagePort');

/** Entry → engine. */
export const toEngineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('begin'), settings: engineSettingsSchema, peers: z.record(z.string(), portSchema) }),
  z.object({ type: z.literal('peer'), name: z.string(), port: portSchema }),
  z.object({ type: z.literal('deploy'), ref: algorithmRefSchema }),
  /** The requests of one turn of the entry's event loop, admitted (and prefilled) in one step. */
  z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) }),
  z.object({ type: z.literal('release'), id: z.string(), serial: int, status: z.enum(['done', 'failed', 'cancelled']) }),
  z.object({ type: z.literal('threshold'), threshold: int, maxWaitMs: amount }),
  /** A sync mode's round lets the engine launch one step. */
  z.object({ type: z.literal('grant') }),
  z.object({ type: z.literal('down'), down: z.boolean() }),
  z.object({ type: z.literal('trace'), on: z.boolean() }),
  /** The engine of `model` restarted empty: handoffs there carry the whole sequence again. */
  z.object({ type: z.literal('peer-lost'), model: z.string() }),
  z.object({ type: z.literal('close') }),
  /** Test hook: the thread dies with an uncaught error, as a native crash would kill it. */
  z.object({ type: z.literal('crash'), message: z.string() }),
]);

/** Engine → engine: a step's handoffs to this peer, together. */
export const toPeerSchema = z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) });

/** Engine → entry: one `step` message per step, its commits and events in order, the trace, the lane. */
export const fromEngineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), info: modelInfoSchema }),
  z.object({ type: z.literal('load-error'), message: z.string() }),
  z.object({
    type: z.literal('step'),
    commits: commitColumnsSchema.optional(),
    events: list(wireEventSchema),
    trace: list(traceEventSchema),
    lane: laneStatsSchema,
    returned: int,
  }),
  /** Handoffs to a model this engine has no link to: the entry passes them on. */
  z.object({ type: z.literal('deliver'), to: z.string(), arrivals: list(wireArrivalSchema) }),
  z.object({ type: z.literal('closed') }),
]);

export type WireSpec = z.infer<typeof wireSpecSchema>;
export type RequestCounters = z.infer<typeof countersSchema>;
export type WireArrival = z.infer<typeof wireArrivalSchema>;
export type WireError = z.infer<typeof wireErrorSchema>;
export type WireEvent = z.infer<typeof wireEventSchema>;
export type CommitColumns = z.infer<typeof commitColumnsSchema>;
export type TextState = z.infer<typeof textStateSchema>;
export type EngineSettings = z.infer<typeof engineSettingsSchema>;
export type ToEngine = z.infer<typeof toEngineSchema>;
export type ToPeer = z.infer<typeof toPeerSchema>;
export type FromEngine = z.infer<typeof fromEngineSchema>;
