// The model-runner protocol, defined once: a runner's step rows and outputs, and the messages to and from a runner in a worker thread.
import { z } from 'zod';
import { modelInfoSchema, samplingSchema, signalsSchema } from './engineProtocol.ts';

const int = z.number().int();

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

export type StepWants = z.infer<typeof stepWantsSchema>;
export type StepRow = z.infer<typeof stepRowSchema>;
export type StepPass = z.infer<typeof stepPassSchema>;
export type StepOutput = z.infer<typeof stepOutputSchema>;
export type ToRunner = z.infer<typeof toRunnerSchema>;
export type FromRunner = z.infer<typeof fromRunnerSchema>;
