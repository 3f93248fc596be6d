// Evaluate / predict wire messages (/admin/evaluate*, /admin/prediction-check): a draft's run on validation problems, its predicted serving cost, and the live check of a prediction.
import { z } from 'zod';

/** Bounds of one evaluation run; the server states them in its errors and the designer in its inputs. */
export const EVALUATE_BOUNDS = {
  defaultProblems: 100,
  defaultConcurrency: 4,
  /** Requests of one run in flight at once; also at most half the server's maxConcurrency, so live traffic keeps the other half. */
  maxConcurrency: 8,
  /** The bundled word-problem answers take up to about 90 tokens (the empty think block included). */
  defaultMaxTokens: 128,
  maxTokens: 256,
  /** Runs at once on one server, whatever their clients. */
  maxRuns: 2,
  /** Concurrency a prediction may be asked for. */
  maxPredictConcurrency: 32,
} as const;

const params = z.record(z.string(), z.unknown());
/** A task: a bundled task's name, or a path on the server to a task folder (or its task.json); docs/api.md has the format. */
export const taskRefSchema = z.string().trim().min(1, 'name a bundled task or give a path to a task folder').max(1024);

const runOptions = {
  /** The task whose validation problems run (default: the bundled word-problems task). */
  task: taskRefSchema.optional(),
  /** Validation problems to run, the set's first N (default 100, at most the set's size). */
  problems: z.number().int().min(1).optional(),
  concurrency: z.number().int().min(1).max(EVALUATE_BOUNDS.maxConcurrency).optional(),
  maxTokens: z.number().int().min(1).max(EVALUATE_BOUNDS.maxTokens).optional(),
  /** Who runs it (a designer tab): one run at a time per client. Default: the caller's address. */
  client: z.string().min(1).max(64).optional(),
};

/** POST /admin/evaluate: a compiled draft (`ir`), a built-in with parameters, or a served name (`model`: a deployed algorithm or a single model). */
export const evaluateRequestSchema = z.union([
  z.object({ ir: z.unknown().refine((v) => v !== undefined, 'ir is required'), ...runOptions }).strict(),
  z.object({ builtin: z.string(), params: params.optional(), ...runOptions }).strict(),
  z.object({ model: z.string(), ...runOptions }).strict(),
]);
export type EvaluateRequest = z.infer<typeof evaluateRequestSchema>;

const matrix = z.array(z.array(z.number()));

/** What the throughput model needs of a run: P[i][j] (a step on i followed by work on j), C[i][j] (tokens it commits), request-steps per model. */
export const routingStatsSchema = z.object({ models: z.array(z.string()), P: matrix, C: matrix, steps: z.array(z.number()) });
export type RoutingStats = z.infer<typeof routingStatsSchema>;

export const evaluationResultSchema = z.object({
  runId: z.string(),
  /** What ran: "draft", a built-in's name, or the served name. */
  label: z.string(),
  /** Content hash of the draft IR (null for other runs): a deploy of the same IR finds its prediction by it. */
  irKey: z.string().nullable(),
  /** The task's name (its header's) and grader kind. */
  task: z.string(),
  grader: z.string(),
  problems: z.number().int(),
  correct: z.number().int(),
  accuracy: z.number(),
  meanOutputTokens: z.number(),
  handoffsPerRequest: z.number(),
  /** Committed tokens by model, as shares of all committed. */
  tokenShare: z.record(z.string(), z.number()),
  routing: routingStatsSchema,
  concurrency: z.number().int(),
  maxTokens: z.number().int(),
  durationMs: z.number(),
  /** The run as a measurement: requests it had in flight on average, and committed tokens per second it made. */
  meanInFlight: z.number(),
  tokS: z.number(),
  /** Requests that failed (a model down mid-run); counted as wrong. */
  failed: z.number().int(),
});
export type EvaluationResult = z.infer<typeof evaluationResultSchema>;

/** One line of the NDJSON stream POST /admin/evaluate answers with. */
export const evaluateEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('started'),
    runId: z.string(),
    problems: z.number().int(),
    concurrency: z.number().int(),
    maxTokens: z.number().int(),
    models: z.array(z.string()),
  }),
  z.object({ type: z.literal('progress'), done: z.number().int(), total: z.number().int(), correct: z.number().int(), elapsedMs: z.number() }),
  z.object({ type: z.literal('result'), result: evaluationResultSchema }),
  z.object({ type: z.literal('cancelled'), done: z.number().int(), total: z.number().int() }),
  z.object({ type: z.literal('error'), message: z.string(), code: z.string() }),
]);
export type EvaluateEvent = z.infer<typeof evaluateEventSchema>;

/** DELETE /admin/evaluate/:runId */
export const cancelResponseSchema = z.object({ runId: z.string(), cancelled: z.boolean() });
export type CancelResponse = z.infer<typeof cancelResponseSchema>;

/** What a run on this server may ask for (`GET /admin/evaluate/bounds`): the panel's fields take their limits from it. */
export const evaluateBoundsSchema = z.object({
  /** The task these bounds are for (`?task=`, default the bundled one) and the bundled tasks a run may name. */
  task: z.string(),
  tasks: z.array(z.object({ name: z.string(), description: z.string().optional(), grader: z.string() })),
  /** The task's validation set's size: the most problems a run takes. */
  problems: z.number().int(),
  defaultProblems: z.number().int(),
  /** The most requests of one run in flight here (half the server's maxConcurrency, at most EVALUATE_BOUNDS.maxConcurrency). */
  concurrency: z.number().int(),
});
export type EvaluateBounds = z.infer<typeof evaluateBoundsSchema>;

// ---- POST /admin/evaluate/:runId/predict ---------------------------------------------------------

export const predictRequestSchema = z
  .object({
    concurrency: z.number().int().min(1).max(EVALUATE_BOUNDS.maxPredictConcurrency),
    /**
     * Ms each client spends per request outside this server: the network both ways and its own turnaround
     * (what a response's `Server-Timing: total` leaves of the client's wall time). Those clients are on no
     * model then; default 0, clients that ask again the moment an answer lands.
     */
    clientMs: z.number().min(0).max(60_000).optional(),
    /** p99 bounds, ms: with one, the answer adds goodput (requests/s meeting them) at that concurrency. */
    slo: z.object({ tpotMs: z.number().positive().optional(), ttftMs: z.number().positive().optional() }).strict().optional(),
  })
  .strict();
export type PredictRequest = z.infer<typeof predictRequestSchema>;

const settingSchema = z.object({
  thresholds: z.record(z.string(), z.number().int()),
  /** Committed tok/s, the throughput model's figure from the run's P and C and the server's step latency (launch to next launch). */
  tokS: z.number(),
  /**
   * The spread of the step latencies the prediction was fitted on, carried through the model: tok/s
   * with every step at the 75th percentile of its model's and size's latencies (`low`) and at the
   * 25th (`high`). `tokS` reads them at their median.
   */
  tokSBand: z.object({ low: z.number(), high: z.number() }),
  /** Requests on a model at once: the clients, less those the entry, the crossings between threads and the clients themselves hold (Little's law with `entryMs` + `transitMs` + `clientMs`). */
  inEngine: z.number(),
  p99TpotMs: z.number(),
  meanTpotMs: z.number(),
  /** With an SLO: requests/s meeting it, and whether the p99s do. */
  goodputRps: z.number().optional(),
  meetsSlo: z.boolean().optional(),
});

/** Live traffic this recent counts for a prediction's step latency and entry cost: the served models' live profile. */
export const PREDICT_LIVE_WINDOW_MS = 30_000;

export const predictionSchema = z.object({
  runId: z.string(),
  concurrency: z.number().int(),
  /** The thresholds the throughput model would choose, and what it predicts with them. */
  best: settingSchema,
  /** The thresholds in force on the server now (what a deploy runs with unless thresholds are "auto"); null where they are infeasible at this concurrency. */
  current: settingSchema.nullable(),
  /** The HTTP entry's measured ms per request outside the cluster, which the prediction leaves out of the engine's concurrency; null: no live HTTP traffic to measure it on. */
  entryMs: z.number().nullable(),
  /** The evaluation's measured ms per request in the cluster on no model (the entry to an engine, hand-offs crossing threads, the last batch to the end), also left out of the engine's concurrency; null: not measured. */
  transitMs: z.number().nullable(),
  /** The clients' own ms per request outside the server, as asked (`clientMs`), also left out of the engine's concurrency. */
  clientMs: z.number(),
  /** Per model: the batches the step-latency profile was fitted from. */
  latencyBatches: z.record(z.string(), z.number().int()),
  /**
   * Per model: its batches of live traffic in the window the prediction reads (the last 30 s). 0: the
   * model's step latency is the evaluation's alone, measured without the HTTP entry's work beside it
   * and with only this draft's models running, so the prediction can be off by 15 % or more either
   * way (docs/benchmarks.md, the `predict` suite).
   */
  liveBatches: z.record(z.string(), z.number().int()),
  method: z.enum(['chain', 'simulate']),
});
export type Prediction = z.infer<typeof predictionSchema>;

// ---- GET /admin/prediction-check?algorithm=NAME&windowMs=MS ------------------------------------

export const predictionCheckSchema = z.object({
  algorithm: z.string(),
  /** The version running and the evaluation its prediction comes from (null: never evaluated, so nothing to compare). */
  version: z.number().int().nullable(),
  evaluated: z.boolean(),
  windowMs: z.number(),
  /** Requests of the algorithm that ended in the window; the time some were in flight, and the mean in flight then (the concurrency predicted at). */
  requests: z.number().int(),
  busyMs: z.number(),
  meanActive: z.number(),
  /** tok/s over the busy time: a pause in traffic is not a slower algorithm. */
  measured: z.object({ tokS: z.number(), handoffsPerToken: z.number() }),
  /** At the window's mean in flight (rounded), from the evaluation's routing and the step latencies of the evaluation and the window; the band as a prediction's (`tokSBand`). */
  predicted: z.object({ tokS: z.number(), tokSBand: z.object({ low: z.number(), high: z.number() }), handoffsPerToken: z.number() }).nullable(),
  /** What was held against what: the window's traffic beside the evaluation's (null: nothing predicted). */
  compared: z
    .object({
      /** The concurrency predicted at: the window's mean in flight, rounded. */
      concurrency: z.number().int(),
      tokensPerRequest: z.number(),
      evaluatedTokensPerRequest: z.number(),
      /** The window's most common max_tokens (null: no request ended), and the evaluation's. */
      maxTokens: z.number().int().nullable(),
      evaluatedMaxTokens: z.number().int(),
      evaluatedConcurrency: z.number().int(),
      /** Other traffic's share of the batch rows on the models in the window. */
      otherShare: z.number(),
    })
    .nullable(),
  /** The window ran as the prediction assumes (steady concurrency, the evaluation's request shape, the algorithm alone, enough requests): only then a percentage. */
  comparable: z.boolean(),
  /** Why not, one sentence each, with both figures (or why nothing could be predicted). */
  notComparable: z.array(z.string()),
  /** The measured tok/s lies in the predicted band (null: not comparable). */
  inBand: z.boolean().nullable(),
  /** |predicted − measured| / measured, only for a comparable window (else null); flagged past 15 %. */
  tokSDiff: z.number().nullable(),
  handoffDiff: z.number().nullable(),
  flagged: z.boolean(),
});
export type PredictionCheck = z.infer<typeof predictionCheckSchema>;

/** The share a prediction may be off by before the timeline flags it. */
export const PREDICTION_TOLERANCE = 0.15;
