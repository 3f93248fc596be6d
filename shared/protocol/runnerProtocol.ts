// The model-runner protocol, defined once: the model's facts, a step's rows (sampling included) and signals, and the messages to and from a runner in a worker thread.
import { z } from 'zod';

const int = z.number().int();
const list = <T extends z.ZodType>(item: T) => z.array(item).readonly();
const tokens = list(int);

/** OpenAI's penalties and logit bias (as vLLM applies them): on the logits of the draw only, so signals still describe the model. */
const penaltiesSchema = z.object({
  frequency: z.number(),
  presence: z.number(),
  /** [token id, bias] pairs, bias in [-100, 100]. */
  logitBias: list(z.tuple([int, z.number()]).readonly()),
  /** Where the output starts (the prompt length): after any handoff the runner's cache from here on is the committed output. */
  outputFrom: int,
});

export const samplingSchema = z.object({
  /** 0 = greedy. */
  temperature: z.number(),
  topP: z.number(),
  /** 0 = no top-k cut. */
  topK: int,
  /** vLLM's min_p; absent or 0 = none. */
  minP: z.number().optional(),
  /** Draws are keyed by (seed, position, model), so a run replays exactly. */
  seed: z.number(),
  /** vLLM's stop_token_ids: they end the answer as an EOS does. */
  stopTokenIds: tokens.optional(),
  /** Below `min_tokens`: EOS and `stopTokenIds` are left out of the draw (signals still describe the whole distribution). */
  suppressEos: z.boolean().optional(),
  /** The runner reports at least this many top (id, prob) pairs, for the client's logprobs. */
  topLogprobs: int.optional(),
  /** Absent on the hot path: no history kept, no logits copied. */
  penalties: penaltiesSchema.optional(),
});

/** What a model's step says about the token it sampled for one request. */
export const signalsSchema = z.object({
  token: int,
  /** -Σ p log p / log |V|, in [0, 1]. */
  entropy: z.number(),
  maxProb: z.number(),
  /** Between the two largest probabilities. */
  margin: z.number(),
  tokenProb: z.number(),
  /** Best first, wants.topK of them. */
  topIds: list(int),
  topProbs: list(z.number()),
  hidden: z.custom<Float32Array>((v) => v instanceof Float32Array, 'a Float32Array').optional(),
  /** Auxiliary router networks' outputs, by head name. */
  heads: z.record(z.string(), z.number()).readonly(),
});

export const modelInfoSchema = z.object({
  /** Model folder name. */
  name: z.string(),
  vocabSize: int,
  /** Every token id that ends an answer (config.json's and generation_config.json's). */
  eosTokenIds: list(int),
  maxContext: int,
  hiddenSize: int,
  /** KV bytes one cached token costs (all layers, keys and values). */
  kvBytesPerToken: z.number(),
});

/** Per-model extras a step must compute for the algorithm (once per row, batched in the runner). */
export const stepWantsSchema = z.object({
  /** How many top-k (id, prob) pairs the route function sees; 0 = none. */
  topK: int,
  /** Hand the last-layer hidden state to route(). */
  hidden: z.boolean(),
  /** Names of auxiliary router networks shipped with the model (e.g. "citer", "r2r", "colm"). */
  heads: z.array(z.string()).readonly(),
  /**
   * False: route() reads none of entropy, maxProb, margin, tokenProb, topProbs, so the runner may
   * leave them 0 and skip their O(V) work (the token is exact; `topK`, heads and logprobs still get
   * theirs). Absent: they are read.
   */
  signals: z.boolean().optional(),
});

/**
 * One request's share of a batched step. The runner appends `tokens` to the request's cache
 * (which must hold exactly `position` tokens: 0 = a fresh cache, so a prefill) and samples the
 * token at `position + tokens.length`.
 */
export const stepRowSchema = z.object({
  /** Cache handle, unique per live local request on this runner. */
  cacheId: int,
  /** Request id, for traces and for seeded draws in simulated runners. */
  requestId: z.string(),
  tokens: z.array(int).readonly(),
  position: int,
  sampling: samplingSchema,
  wants: stepWantsSchema,
  /**
   * Present: a grammar's bitmask over the vocabulary (ceil(V / 32) words; bit i of word w set: token
   * 32w + i may be drawn). The draw, greedy or sampled, takes only allowed tokens.
   */
  mask: z.custom<Int32Array>((v) => v instanceof Int32Array, 'an Int32Array').optional(),
});

/** One forward pass of a step: its rows, the tokens they fed, the longest feed, and its model ms. */
export const stepPassSchema = z.object({ rows: int, tokens: int, longest: int, modelMs: z.number() });

export const stepOutputSchema = z.object({
  /** One result per input row, same order. */
  rows: z.array(signalsSchema),
  /** For simulated runners: how long the step takes in clock time; real runners leave it out and resolve when done. */
  durationMs: z.number().optional(),
  /** Wall milliseconds spent inside the model itself (session.run or equivalent), for breakdowns. */
  modelMs: z.number().optional(),
  /** The forward passes the step took (a mixed step may take two), for breakdowns of prefill against decode. */
  passes: z.array(stepPassSchema).optional(),
});

/** To a runner in a worker thread (WorkerRunner → onnxWorker). Trusted: the same program on both sides, so not parsed. */
export const toRunnerSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('step'), id: int, rows: z.array(stepRowSchema).readonly() }),
  z.object({ type: z.literal('release'), cacheId: int }),
  z.object({ type: z.literal('fork'), source: int, target: int, tokens: int }),
  z.object({ type: z.literal('close'), id: int }),
  /** Test hook: the worker throws an uncaught error, as a native crash or bug would kill it. */
  z.object({ type: z.literal('crash'), message: z.string() }),
]);

/** From a runner in a worker thread. */
export const fromRunnerSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), info: modelInfoSchema }),
  z.object({ type: z.literal('result'), id: int, output: stepOutputSchema }),
  z.object({ type: z.literal('error'), id: int, message: z.string(), stack: z.string().optional() }),
  z.object({ type: z.literal('closed'), id: int }),
]);

export type SamplingParams = z.infer<typeof samplingSchema>;
export type SamplingPenalties = z.infer<typeof penaltiesSchema>;
export type TokenSignals = z.infer<typeof signalsSchema>;
export type ModelInfo = z.infer<typeof modelInfoSchema>;
export type StepWants = z.infer<typeof stepWantsSchema>;
export type StepRow = z.infer<typeof stepRowSchema>;
export type StepPass = z.infer<typeof stepPassSchema>;
export type StepOutput = z.infer<typeof stepOutputSchema>;
export type ToRunner = z.infer<typeof toRunnerSchema>;
export type FromRunner = z.infer<typeof fromRunnerSchema>;
