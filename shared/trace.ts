// Trace events: every batch, handoff, request state change and queue change, as one typed union.
import { z } from 'zod';

/** Where a request is on one sub-server (the local lifecycle), or at the entry ("request"). */
export const LOCAL_STATES = ['queued', 'running', 'pending-return', 'done', 'cancelled', 'failed'] as const;
export type LocalStatus = (typeof LOCAL_STATES)[number];

export const REQUEST_STATES = ['admitted', 'streaming', 'done', 'failed', 'cancelled'] as const;
export type RequestStatus = (typeof REQUEST_STATES)[number];

export const PHASES = ['prefill', 'extend', 'decode'] as const;

const time = z.number().finite();

export const traceEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('batch'),
    model: z.string(),
    batchId: z.number().int(),
    requestIds: z.array(z.string()),
    /** Dominant phase: prefill if any row prefills, else extend if any extends, else decode. */
    phase: z.enum(PHASES),
    /** Tokens fed in this batch (prefill and extend rows feed more than one; in older traces, lookahead steps included). */
    tokens: z.number().int(),
    start: time,
    end: time,
    /** Forward passes the runner made for it (absent: 1). More only in trace files of a runner that decoded ahead: 1 + its lookahead steps; step cost = (end − start) / steps. */
    steps: z.number().int().min(1).optional(),
    /** Row results the engine took from lookahead (request-steps beyond one per row; absent: 0). This runtime emits none; read so trace files that carry it load. */
    aheadRows: z.number().int().min(0).optional(),
    /** Prompt tokens the rows took from the prefix cache instead of feeding them (absent: 0). */
    cachedTokens: z.number().int().min(0).optional(),
    /** Launch → the runner's results back in the engine, ms (the rest, to `end`, is routing them). */
    runMs: z.number().min(0).optional(),
    /** Of that, time inside the model itself (session.run and router heads), as the runner measures it. */
    modelMs: z.number().min(0).optional(),
    /** Rows whose draw a grammar masked (structured outputs, tool calls; absent: 0). */
    maskedRows: z.number().int().min(0).optional(),
  }),
  z.object({
    type: z.literal('handoff'),
    t: time,
    requestId: z.string(),
    from: z.string(),
    to: z.string(),
    /** Batch on `from` that produced the handoff. */
    batchId: z.number().int(),
    /** Tokens carried (the unseen suffix). */
    tokens: z.number().int(),
    kept: z.boolean(),
    /** Output index (prompt excluded) of the token sampled just before the hand-off; absent in older traces. */
    at: z.number().int().optional(),
  }),
  z.object({
    type: z.literal('request-state'),
    t: time,
    requestId: z.string(),
    /** Sub-server whose local lifecycle changed, or null for the entry's request actor. */
    model: z.string().nullable(),
    state: z.enum([...LOCAL_STATES, ...REQUEST_STATES] as [string, ...string[]]),
  }),
  z.object({
    type: z.literal('queue'),
    t: time,
    model: z.string(),
    /** Requests ready to run on this model and waiting for a batch. */
    length: z.number().int(),
  }),
  z.object({
    type: z.literal('request-end'),
    t: time,
    requestId: z.string(),
    status: z.enum(REQUEST_STATES),
    /** Committed output tokens and, run-length coded, which model produced them. */
    tokens: z.array(z.number().int()),
    runs: z.array(z.object({ model: z.string(), count: z.number().int() })),
    /** The text of each output token (as streamed: '' for a token ending inside a character), added by a server that has the tokenizer; older traces lack it. */
    text: z.array(z.string()).optional(),
    handoffs: z.number().int(),
    /** Output index from which a grammar masked every token (absent: none did). */
    maskedFrom: z.number().int().min(0).optional(),
    admittedAt: time,
    firstTokenAt: time.nullable(),
  }),
  z.object({
    type: z.literal('config'),
    t: time,
    mode: z.string(),
    retainState: z.boolean(),
    thresholds: z.record(z.string(), z.number().int()),
    maxWaitMs: z.number(),
    /** Most lookahead steps a row may take (0: none). This runtime emits none; read so trace files that carry it load. */
    lookahead: z.number().int().min(0).optional(),
  }),
]);

export type TraceEvent = z.infer<typeof traceEventSchema>;
export type TraceEventOf<T extends TraceEvent['type']> = Extract<TraceEvent, { type: T }>;

/** Anything that accepts trace events. */
export interface TraceSink {
  emit(event: TraceEvent): void;
}

/** A request-end event's `runs`: which model produced each output token, run-length coded. */
export function modelRuns(producedBy: readonly string[]): TraceEventOf<'request-end'>['runs'] {
  const runs: TraceEventOf<'request-end'>['runs'] = [];
  for (const model of producedBy) {
    const last = runs[runs.length - 1];
    if (last && last.model === model) last.count++;
    else runs.push({ model, count: 1 });
  }
  return runs;
}
