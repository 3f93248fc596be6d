// The engine protocol, defined once: what crosses between the entry and engine threads, and from engine to engine.
import { z } from 'zod';
import { traceEventSchema } from '../trace.ts';
import { constraintSchema } from './constraint.ts';

const int = z.number().int();
/** Any number but NaN: capacities and deadlines may be Infinity (unbounded), which z.number() refuses. */
const amount = z.custom<number>((v) => typeof v === 'number' && !Number.isNaN(v), 'a number');
/** Arrays as the runtime holds them: read-only once built. */
const list = <T extends z.ZodType>(item: T) => z.array(item).readonly();
const tokens = list(int);

/**
 * OpenAI penalties and logit bias, applied to the logits of the draw only, as OpenAI and vLLM define them:
 * logit[t] += bias[t] - frequency * count[t] - presence * (count[t] > 0), count over the output tokens.
 * Signals (entropy, top-k, logprobs) still describe the model's own distribution.
 */
export const penaltiesSchema = z.object({
  frequency: z.number(),
  presence: z.number(),
  /** [token id, bias] pairs, bias in [-100, 100]. */
  logitBias: list(z.tuple([int, z.number()]).readonly()),
  /** Where the request's output starts in its sequence (the prompt length): the runner counts the tokens its cache holds from here on, which after any handoff are the committed output. */
  outputFrom: int,
});

export const samplingSchema = z.object({
  /** 0 = greedy. */
  temperature: z.number(),
  topP: z.number(),
  /** 0 = no top-k cut. */
  topK: int,
  /** vLLM's min_p: tokens below minP times the most likely one's probability are left out of the draw; absent or 0 = none. */
  minP: z.number().optional(),
  /** Per-request seed; draws are keyed by (seed, position, model) so a run replays exactly. */
  seed: z.number(),
  /** vLLM's stop_token_ids: these end the answer as an EOS does (finish "stop", the token not shown) and, below min_tokens, are left out of the draw with it. */
  stopTokenIds: tokens.optional(),
  /** The model's EOS tokens and `stopTokenIds` are left out of the draw (the request has not reached its `min_tokens`); signals still describe the whole distribution. */
  suppressEos: z.boolean().optional(),
  /** The client asked for this many top logprobs: the runner reports at least this many top (id, prob) pairs, more than `wants.topK` if need be. */
  topLogprobs: int.optional(),
  /** Absent on the hot path (no history kept, no logits copied). */
  penalties: penaltiesSchema.optional(),
});

/** A request's fixed facts, with its algorithm by key (the engine built it from a `deploy`). */
export const wireSpecSchema = z.object({
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
  /** Present: the engines detokenise its output (the stop strings end it where its text first holds one, from `minTokens` tokens on). */
  text: z.object({ stop: list(z.string()) }).optional(),
  /** The entry reads each committed token's signals (per-token detail, logprobs): engines across a port send them; otherwise they stay there. */
  detail: z.boolean().optional(),
  /** Present: every engine masks its draws with this grammar (shared/protocol/constraint.ts). */
  constraint: constraintSchema.optional(),
});

/** A request's detokenising as it stands (runtime/core/outputProcessor.ts): owned by the engine decoding it, carried by every handoff. */
export const textStateSchema = z.object({
  detok: z.object({ ids: z.array(int), read: int, prefixText: z.string() }),
  /** Tokens pushed. */
  count: int,
  /** The output text from character `tailAt` on: as far back as a stop string can reach, and what is held back. */
  tail: z.string(),
  tailAt: int,
  /** Characters the client has been given. */
  emitted: int,
  /** Where the first stop string begins; -1: none yet. */
  stopAt: int,
});

export const handoffSchema = z.object({
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

/** Per-request tallies, indexed by model id; the engine that owns the request has them whole. Mutable: that engine counts into them. */
/** `cachedPrompt`: prompt tokens the entry model's first prefill found in the prefix cache (usage.prompt_tokens_details.cached_tokens). */
export const countersSchema = z.object({ handoffs: int, discarded: int, admissions: z.array(int), tokensFed: z.array(int), cachedPrompt: int.default(0) });

/** A request arriving at an engine: the unseen suffix and its anchor, what each model has seen, the owner's tallies; never KV. */
export const wireArrivalSchema = z.object({
  spec: wireSpecSchema,
  handoff: handoffSchema,
  known: z.array(int),
  counters: countersSchema,
  /** The whole committed sequence, when the receiver may hold no state (standard serving, or a replica re-placed after its home was lost). */
  context: tokens.optional(),
  /** Engine to engine over NATS: per model, the replica (its subject) that holds the request's state, so a return goes home. */
  homes: z.record(z.string(), z.string()).optional(),
  /** The request's text so far, when it is detokenised (spec.text). */
  text: textStateSchema.optional(),
});

/** What a model's step says about the token it sampled for one request. */
export const signalsSchema = z.object({
  /** The sampled token id. */
  token: int,
  /** Normalised entropy: -Σ p log p / log |V|, in [0, 1]. */
  entropy: z.number(),
  /** Largest probability. */
  maxProb: z.number(),
  /** Difference between the two largest probabilities. */
  margin: z.number(),
  /** Probability of the sampled token. */
  tokenProb: z.number(),
  /** Top-k ids and probabilities, best first (length = wants.topK). */
  topIds: list(int),
  topProbs: list(z.number()),
  /** Last-layer hidden state, when asked for. */
  hidden: z.custom<Float32Array>((v) => v instanceof Float32Array, 'a Float32Array').optional(),
  /** Outputs of auxiliary router networks, by head name. */
  heads: z.record(z.string(), z.number()).readonly(),
});

export const wireErrorSchema = z.object({ code: z.string(), message: z.string(), param: z.string().nullable() });

/** What crosses a port besides commits (those travel as columns). */
export const wireEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('finish'),
    requestId: z.string(),
    status: z.enum(['done', 'failed']),
    reason: z.enum(['stop', 'length', 'cancelled', 'error']),
    error: wireErrorSchema.optional(),
    counters: countersSchema.optional(),
    committed: int.optional(),
    /** The text held back until the end (a forming stop string, an incomplete character). */
    text: z.string().optional(),
  }),
  /** The request left for model `to` (its `hops`-th handoff): the entry knows which engine holds it without asking. */
  z.object({
    type: z.literal('moved'),
    requestId: z.string(),
    to: z.string(),
    hops: int,
    /** Sent straight to a replica of a remote peer (its subject): the entry learns where the request's state now is without seeing the handoff. */
    replica: z.string().optional(),
  }),
]);

const int32s = z.custom<Int32Array>((v) => v instanceof Int32Array, 'an Int32Array');

/**
 * A wave's commits in columns, row i the i-th commit: one Int32Array (transferred, not cloned) holding
 * `index`, `token`, `model`, `atHandoff` (0/1) and `textEnd` one column after the other, the text deltas
 * joined in one string (row i's is text[textEnd[i-1]..textEnd[i])), and signals only for the rows whose
 * request reads them (spec.detail), as [row, signals] pairs.
 */
export const commitColumnsSchema = z.object({
  ids: list(z.string()),
  columns: int32s,
  text: z.string(),
  signals: list(z.tuple([int, signalsSchema])),
});
export const COMMIT_COLUMNS = 5;

/** One engine's figures for /admin/status, /metrics and the benches. */
export const threadStatsSchema = z.object({ cpuMs: z.number(), gcMs: z.number(), waitMs: z.number() });

export const laneReportSchema = z.object({
  name: z.string(),
  threshold: int,
  ready: int,
  running: int,
  waitingAdmission: int,
  pendingReturn: int,
  executing: z.boolean(),
  kvBytes: z.number(),
  kvReservedBytes: z.number(),
  batches: int,
  rows: int,
  /** Rows that fed one chunk of a longer prompt or suffix (chunked prefill), their outputs unused. */
  chunks: int,
  admissions: int,
  evictions: int,
  /** Launch → the runner's results, summed over batches, ms. */
  busyMs: z.number(),
  /** Launch → the batch's rows applied (busyMs plus routing them), summed, ms. */
  batchMs: z.number(),
  /** Inside the model (session.run and router heads) as the runner timed it, summed, ms. */
  modelMs: z.number(),
  /** Prefix cache, in tokens as vLLM counts them: context looked up at admission, and found cached. */
  prefixQueries: int,
  prefixHits: int,
  /** What the prefix cache holds now: caches kept for later prompts (included in kvBytes), and their KV bytes. */
  prefixEntries: int,
  kvPrefixBytes: z.number(),
  /**
   * An engine in its own thread: that thread's CPU, garbage-collection pause and run-queue wait
   * (runnable, waiting for a core: 0 without /proc) since it started, ms (read at most every 25 ms).
   */
  thread: threadStatsSchema.optional(),
});

export type ThreadStats = z.infer<typeof threadStatsSchema>;

export const modelInfoSchema = z.object({
  /** Model folder name, e.g. "small". */
  name: z.string(),
  vocabSize: int,
  /** Every token id that ends an answer (config.json's and generation_config.json's, each once); [] for none. */
  eosTokenIds: list(int),
  maxContext: int,
  hiddenSize: int,
  /** KV bytes one cached token costs (all layers, keys and values). */
  kvBytesPerToken: z.number(),
});

export const algorithmSourceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('builtin'), factory: z.string(), params: z.record(z.string(), z.unknown()).optional() }),
  z.object({ kind: z.literal('ir'), ir: z.unknown() }),
  z.object({ kind: z.literal('single'), model: z.string() }),
  z.object({ kind: z.literal('module'), module: z.string(), export: z.string(), args: list(z.unknown()).optional() }),
]);

export const algorithmRefSchema = z.object({
  key: z.string(),
  source: algorithmSourceSchema,
  catalog: list(z.object({ name: z.string(), heads: list(z.string()), vocabSize: int.optional() })).optional(),
});

/** The scheduling modes (runtime/core/servingPolicy.ts explains them); the config schema and the engine wire share this one list. */
export const SCHEDULING_MODES = ['step-sync', 'model-sync', 'async-immediate', 'async-delayed'] as const;

/**
 * What an engine begins with: the config file's settings under their config names (models[].maxBatch,
 * scheduling.mode, .retainState, .maxWaitMs, .prefixCache), plus what the entry adds (index, models,
 * threshold, kvCapacityTokens from the memory plan, origin, trace, checkInvariants). Runtime types
 * (EngineOptions, EngineLimits, DeploymentSettings) are Picks of this; ClusterOptions picks the config's.
 */
export const engineSettingsSchema = z.object({
  index: int,
  models: list(z.string()),
  maxBatch: int,
  /** Tokens one step feeds at most (models[].maxStepTokens): longer prompts and suffixes are fed in chunks; Infinity = no bound. */
  maxStepTokens: amount,
  /** Delayed-batching threshold T: launch when this many requests are ready (async-delayed). */
  threshold: int,
  /** KV capacity in tokens; Infinity = unbounded (hence `amount`, not the config's finite numbers: Infinity crosses the wire). */
  kvCapacityTokens: amount,
  mode: z.enum(SCHEDULING_MODES),
  /** false: a request that leaves drops its state in the engine (standard serving). */
  retainState: z.boolean(),
  /** Longest a ready request waits for its threshold, in clock ms; Infinity = none (benches and tests pass it, so `amount`). */
  maxWaitMs: amount,
  /** Keep the caches requests let go of, and start new caches from their longest cached prefix. */
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

const status = z.enum(['done', 'failed', 'cancelled']);

/** A remote model as a remote peer engine reaches it: its live replicas, with what the entry's placement rule reads. */
export const remotePeerSchema = z.object({
  model: z.string(),
  replicas: list(z.object({ subject: z.string(), kvCapacityTokens: amount, draining: z.boolean() })),
});

/** Entry → engine thread. */
export const toEngineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('begin'), settings: engineSettingsSchema, peers: z.record(z.string(), portSchema) }),
  z.object({ type: z.literal('peer'), name: z.string(), port: portSchema }),
  /**
   * Over NATS: the other remote models of this entry and their live replicas, sent after `begin` and
   * whenever a replica joins, leaves or starts draining. Handoffs to them go straight to a replica
   * (a request's home there, or one placed by the entry's rule), on `${subject}.peer` frames
   * tagged with `session`, the entry's session at every replica.
   */
  z.object({ type: z.literal('remote-peers'), session: z.string(), peers: list(remotePeerSchema) }),
  z.object({ type: z.literal('deploy'), ref: algorithmRefSchema }),
  /** Requests arriving, those of one turn of the entry's event loop together (admitted, and prefilled, in one step). */
  z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) }),
  z.object({ type: z.literal('release'), id: z.string(), serial: int, status }),
  z.object({ type: z.literal('threshold'), threshold: int, maxWaitMs: amount }),
  /** A sync mode's round lets the engine launch one step. */
  z.object({ type: z.literal('grant') }),
  z.object({ type: z.literal('down'), down: z.boolean() }),
  /** Trace events on (something at the entry reads them) or off. */
  z.object({ type: z.literal('trace'), on: z.boolean() }),
  /** The engine of model `model` restarted empty: handoffs there carry the whole sequence again. */
  z.object({ type: z.literal('peer-lost'), model: z.string() }),
  z.object({ type: z.literal('close') }),
  /** Test hook: the thread dies with an uncaught error, as a native crash would kill it. */
  z.object({ type: z.literal('crash'), message: z.string() }),
]);

/** Engine thread → engine thread: a wave's handoffs to this peer, together. */
export const toPeerSchema = z.object({ type: z.literal('arrive'), arrivals: list(wireArrivalSchema) });

/** Engine thread → entry. One `step` message per wave: every row's commits and finishes in order, the trace, the lane. */
export const fromEngineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), info: modelInfoSchema }),
  z.object({ type: z.literal('load-error'), message: z.string() }),
  z.object({
    type: z.literal('step'),
    commits: commitColumnsSchema.optional(),
    events: list(wireEventSchema),
    trace: list(traceEventSchema),
    lane: laneReportSchema,
    returned: int,
  }),
  /** A wave's handoffs to a model whose engine runs at the entry. */
  z.object({ type: z.literal('deliver'), to: z.string(), arrivals: list(wireArrivalSchema) }),
  z.object({ type: z.literal('closed') }),
]);

export type WireSpec = z.infer<typeof wireSpecSchema>;
export type SamplingParams = z.infer<typeof samplingSchema>;
export type SamplingPenalties = z.infer<typeof penaltiesSchema>;
export type TokenSignals = z.infer<typeof signalsSchema>;
export type RequestCounters = z.infer<typeof countersSchema>;
export type LaneStats = z.infer<typeof laneReportSchema>;
export type ModelInfo = z.infer<typeof modelInfoSchema>;
export type WireArrival = z.infer<typeof wireArrivalSchema>;
export type WireError = z.infer<typeof wireErrorSchema>;
export type WireEvent = z.infer<typeof wireEventSchema>;
export type CommitColumns = z.infer<typeof commitColumnsSchema>;
export type TextState = z.infer<typeof textStateSchema>;
export type EngineSettings = z.infer<typeof engineSettingsSchema>;
export type AlgorithmSourceData = z.infer<typeof algorithmSourceSchema>;
export type ToEngine = z.infer<typeof toEngineSchema>;
export type ToPeer = z.infer<typeof toPeerSchema>;
export type FromEngine = z.infer<typeof fromEngineSchema>;
export type RemotePeer = z.infer<typeof remotePeerSchema>;

// --- over NATS: a remote engine's announcements and the frames of its ordered link ---

/** What a remote engine (`tokenrouter subserver`) publishes on its model's heartbeat subject, every heartbeat period. */
export const replicaAnnouncementSchema = z.object({
  protocol: int,
  /** Human name (`--replica`). */
  replica: z.string(),
  /** Subject of this replica instance (a restarted process gets a new one): entries link to `${subject}.in`. */
  subject: z.string(),
  info: modelInfoSchema,
  kvCapacityTokens: amount,
  heartbeatMs: z.number(),
  /** Its load, for placing new requests: requests it holds, KV tokens they use. */
  requests: int,
  kvTokens: z.number(),
  /** Leaving gracefully: serves the requests it holds, takes no new ones. */
  draining: z.boolean(),
  /** The last heartbeat of a replica shutting down. */
  bye: z.boolean(),
  /** Entries' messages it dropped (late, stray, of an unknown kind) or whose handling failed, since it started; optional for older replicas. */
  ignoredMessages: int.optional(),
});

/**
 * One frame of a link over NATS, either way: messages (those its sender posted in one turn)
 * numbered as one within the sender's session, and an ack of every frame up to `ack`, or the ack
 * alone. `reply`: where the other side answers (the entry's inbox on
 * entry → engine frames, the sending replica's subject on engine → engine frames). `entry`: on
 * engine → engine frames, the session of the entry whose deployment they belong to.
 */
export const linkFrameSchema = z.object({
  session: z.string(),
  reply: z.string().optional(),
  entry: z.string().optional(),
  seq: int.optional(),
  messages: z.array(z.unknown()).optional(),
  ack: int.optional(),
});

export type ReplicaAnnouncement = z.infer<typeof replicaAnnouncementSchema>;
export type LinkFrame = z.infer<typeof linkFrameSchema>;
