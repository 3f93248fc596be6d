// An OpenAI request answered: shed, checked, planned, its choices run on the cluster, the answer streamed as SSE (answerUnary.ts: whole).
import type { Request, Response } from 'express';
import { chatRequestSchema } from '../../../shared/api/openai.ts';
import { completionRequestSchema } from '../../../shared/api/openaiCompletions.ts';
import { TokenRouterError } from '../../errors.ts';
import { endSlowClient } from '../connectionLimits.ts';
import { keyMeterOf } from '../apiKeyGuard.ts';
import type { Drain } from '../drain.ts';
import { sendError, toHttpError } from '../httpErrors.ts';
import { LoadShedder } from '../loadShedder.ts';
import type { ServerMetrics } from '../metrics.ts';
import { logprobsOf, plainTokens, type StreamToken } from '../streamToken.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import { parseBody } from '../zodToError.ts';
import { AnswerOutput, type OutputDelta, streamedCalls } from './answerOutput.ts';
import { answerUnary } from './answerUnary.ts';
import { attribution, finishReasonOf, usageOf } from './answerUsage.ts';
import { checkPlanConstraint } from './constraintCheck.ts';
import { type AnswerContext, type GenerateOutcome, type Kind, type Plan, planRequest, runChoices } from './requestPlan.ts';
import type { CallDelta } from './toolCallParser.ts';

/** The handler of /v1/completions and /v1/chat/completions; its errors go to the error middleware (Express 5 forwards a rejected handler). */
export function answerRequest(service: TokenRouterService, metrics: ServerMetrics, drain?: Drain): (kind: Kind, req: Request, res: Response) => Promise<void> {
  // with scheduling.slo's queueing-delay bound, a request predicted to wait past it is refused (and counted in /metrics)
  const bound = service.config.scheduling.slo?.maxQueueDelayMs;
  const shedder = bound === undefined ? null : new LoadShedder(service.cluster, bound, 10_000, () => metrics.shed.inc());
  if (shedder) service.trace.subscribe(shedder.onEvent);
  return async (kind, req, res) => {
    // Shed before parsing: a refused request costs the entry as little as possible.
    shedder?.check();
    const body = kind === 'chat' ? parseBody(chatRequestSchema, req.body) : parseBody(completionRequestSchema, req.body);
    const plan = planRequest(service, kind, body, requestIdOf(req));
    // compiled before queueing (cached per vocabulary and grammar): a schema the library cannot compile is the request's 400
    if (plan.constraint || plan.checks.length > 0) {
      await checkPlanConstraint(service, plan, body.tokenrouter_ir);
      // the client hung up while it compiled: nothing to answer
      if (res.writableEnded || res.destroyed) return;
    }
    res.set('X-Request-Id', plan.id);
    const meter = keyMeterOf(res);
    const ctx = { service, metrics, drain, onCompletionTokens: meter && ((n: number) => meter.charge(n, 'completion')) };
    if (body.stream) answerStream(ctx, plan, res, req, body.stream_options?.include_usage === true);
    else answerUnary(ctx, plan, res, req);
    // Charged once generation started: a request refused at the door (429, 503) used no tokens.
    meter?.charge(plan.promptTokens, 'prompt');
  };
}

/** A client's X-Request-Id, as vLLM honours it: kept when it is a plain token, refused when it is not. */
function requestIdOf(req: Request): string | undefined {
  const v = req.headers['x-request-id'];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(v)) {
    throw new TokenRouterError('invalid_request', 'X-Request-Id must be 1 to 128 characters of letters, digits and . _ : -', 'X-Request-Id');
  }
  return v;
}

/** A turn's events past this size are written at once: one huge write would sit in the stream's buffer and trip streamBufferBytes for a client that reads. */
const WRITE_BYTES = 16 * 1024;
/** What a stream that is being read may hold past a burst, in streamBufferBytes. */
const BURST_BOUNDS = 4;

const sse = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;

/**
 * A streamed answer as server-sent events (a request refused before its first token gets a JSON
 * error). A turn's commits go out as one write at its end; after a choice's first chunk, the next
 * waits for `plan.streamInterval` tokens. Events are only appended, so nothing is reordered.
 */
function answerStream(ctx: AnswerContext & { metrics: ServerMetrics }, plan: Plan, res: Response, req: Request, includeUsage: boolean): void {
  const { metrics } = ctx;
  const object = plan.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const head = { id: plan.id, object, created: Math.floor(Date.now() / 1000), model: plan.model };
  const choices = plan.jobs.map((job, k) => new ChoiceChunks(ctx.service, plan, head, k, job.echo));
  const started = performance.now();
  const bound = ctx.service.config.limits.streamBufferBytes;
  let over = false;
  /** Events of this turn not yet written. */
  let buf = '';
  const append = (s: string) => {
    if (over) return;
    buf += s;
    if (buf.length >= WRITE_BYTES) writeOut();
  };
  /**
   * A turn's burst may pass the bound with a client that reads: past it, the stream goes on while
   * the client took some between two turns' ends (up to BURST_BOUNDS times the bound); one that
   * took nothing over a whole turn is cut. Within a turn the client cannot read (the loop is busy
   * writing), so only the hard bound is checked there.
   */
  let lastUnsent = 0;
  let drained = 0;
  let pastAtTurnEnd = false;
  /** A piece of this turn already went out (its end still checks the bound). */
  let wroteInTurn = false;
  const writeOut = (turnEnd = false) => {
    if (!res.headersSent) startSse(res);
    drained += Math.max(0, lastUnsent - res.writableLength);
    res.write(buf);
    buf = '';
    const unsent = (lastUnsent = res.writableLength);
    if (over) return;
    if (unsent > BURST_BOUNDS * bound) return abortSlowClient();
    if (!turnEnd) return void (wroteInTurn = true);
    wroteInTurn = false;
    const past = unsent > bound;
    if (past && pastAtTurnEnd && drained === 0) return abortSlowClient();
    pastAtTurnEnd = past;
    drained = 0;
  };
  /** Choice k's pending output as one chunk; content chunks feed the latency histograms. */
  const take = (c: ChoiceChunks) => {
    if (c.hasText) {
      const now = performance.now();
      if (c.lastChunkAt) metrics.interToken.observe((now - c.lastChunkAt) / 1000);
      else metrics.ttft.observe((now - started) / 1000);
      c.lastChunkAt = now;
    }
    append(c.take());
  };
  /** The turn's end: the choices due a chunk add theirs, and the lot goes out in one write. */
  const flush = () => {
    if (over) return;
    for (const c of choices) if (!c.ended && c.hasText && (c.lastChunkAt === 0 || c.count >= plan.streamInterval)) take(c);
    if ((buf || wroteInTurn) && !over) writeOut(true);
  };
  /** The last write: what the turn gathered, then `tail`, and the end of the response. */
  const end = (tail = '') => {
    over = true;
    if (res.writableEnded) return;
    if (!res.headersSent) startSse(res);
    res.end(buf + tail);
    buf = '';
  };
  /** An error event after what was sent, or a JSON error when nothing was. */
  const fail = (e: unknown) => {
    over = true;
    if (!res.headersSent && !buf) return sendError(res, e);
    end(sse(toHttpError(e).body));
  };
  const abortSlowClient = () => {
    over = true;
    cancel();
    metrics.slowClientAborts.inc();
    endSlowClient(res, bound, sse);
  };
  // Generation starts first: a refused request (404, 429, 503) still gets a plain JSON error.
  const cancel = runChoices(ctx, plan.jobs, req, res, {
    unary: false,
    token: (k, text, model, detail) => {
      if (over) return;
      choices[k].add(text, model, detail);
      atTurnEnd(flush);
    },
    ended: (k, o) => {
      const c = choices[k];
      // what was held back to the end (a stop string that might have formed, half a character)
      c.add(o.result.text.slice(c.shown), null, null);
      c.end();
      if (c.hasText || c.count > 0) take(c);
      append(c.finish(o));
      atTurnEnd(flush);
    },
    done: (outs) => {
      if (includeUsage) append(sse({ ...head, choices: [], usage: usageOf(plan, outs) }));
      end('data: [DONE]\n\n');
    },
    stopped: (e) => (e === null ? end() : fail(e)),
  });
}

/** Headers leave with the first chunk, written right after: one write to the socket, not two. */
function startSse(res: Response): void {
  res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
}

/**
 * What one choice committed since its last chunk: its text as the request's parsers read it, a
 * count per writing model, and the tokens when asked for. Tokens whose text is held back (a stop
 * string forming, half a character, an open tool call) ride on the next chunk that shows something.
 */
class ChoiceChunks {
  /** Completions with echo: the prompt's text leads the choice's first chunk. */
  private content: string;
  private reasoning = '';
  private calls: CallDelta[] = [];
  private models: Record<string, number> = {};
  private tokens: StreamToken[] = [];
  /** Tokens committed since the last chunk. */
  count = 0;
  /** Tool calls sent so far. */
  private callCount = 0;
  private first = true;
  private readonly offset: { offset: number };
  private readonly output: AnswerOutput;
  /** Text given to the choice so far (what the end's whole text has past it was held back). */
  shown = 0;
  lastChunkAt = 0;
  ended = false;

  constructor(
    private readonly service: TokenRouterService,
    private readonly plan: Plan,
    /** What every chunk of the answer repeats: its id, object, creation time and model. */
    private readonly head: object,
    private readonly index: number,
    echo: string,
  ) {
    this.content = echo;
    this.offset = { offset: echo.length };
    this.output = new AnswerOutput(plan.output, true);
  }

  add(text: string, model: string | null, token: StreamToken | null): void {
    this.shown += text.length;
    if (text) this.gather(this.output.push(text));
    if (model !== null) {
      this.count++;
      this.models[model] = (this.models[model] ?? 0) + 1;
    }
    if (token) this.tokens.push(token);
  }

  /** The text ended: what the parsers held back comes out. */
  end(): void {
    this.ended = true;
    this.gather(this.output.end());
  }

  private gather(d: OutputDelta): void {
    this.content += d.content;
    this.reasoning += d.reasoning;
    this.calls.push(...d.calls);
  }

  get hasText(): boolean {
    return this.content.length > 0 || this.reasoning.length > 0 || this.calls.length > 0;
  }

  /** The pending output as SSE events (one, or more for tool calls), and the choice emptied. */
  take(): string {
    const logprobs =
      this.plan.logprobs === undefined || this.tokens.length === 0 ? null : logprobsOf(this.service.tokenizer, this.plan.kind, this.tokens, this.offset);
    const ext = this.count === 0 ? undefined : { models: this.models, ...(this.tokens.length > 0 ? { tokens: plainTokens(this.tokens) } : {}) };
    let events = '';
    // the first event carries the logprobs and the extension
    const event = (choice: object) => {
      const first = events === '';
      events += sse({
        ...this.head,
        choices: [{ index: this.index, ...choice, finish_reason: null, logprobs: first ? logprobs : null }],
        ...(first && ext ? { tokenrouter: ext } : {}),
      });
    };
    if (this.plan.kind === 'completion') event({ text: this.content });
    else {
      const delta: Record<string, unknown> = this.first ? { role: 'assistant' } : {};
      if (this.content || (this.first && !this.reasoning)) delta.content = this.content === '' && this.calls.length > 0 ? null : this.content;
      if (this.reasoning) delta.reasoning_content = this.reasoning;
      if (Object.keys(delta).length > 0 || this.calls.length === 0) event({ delta });
      for (const call of streamedCalls(this.calls)) event({ delta: { tool_calls: [call] } });
      this.callCount += this.calls.filter((c) => c.id !== undefined).length;
    }
    this.first = false;
    this.content = this.reasoning = '';
    this.calls = [];
    this.tokens = [];
    this.count = 0;
    this.models = {};
    return events;
  }

  /** The choice's last chunk: its finish reason and its attribution. */
  finish(o: GenerateOutcome): string {
    const body = this.plan.kind === 'chat' ? { delta: {} } : { text: '' };
    const choice = { index: this.index, ...body, finish_reason: finishReasonOf(o.finishReason, this.callCount), logprobs: null };
    return sse({ ...this.head, choices: [choice], tokenrouter: attribution(o) });
  }
}

/**
 * Each stream's share of the turn's step messages leaves as one write after all of them (as vLLM's
 * RequestOutputCollector merges deltas when the producer runs ahead). Kept for that merge when the
 * entry falls behind (test/http/streamInterval.test.ts), not for speed: plain per-chunk writes measured
 * the same at 8 streams of 64 tokens (plain / batched, per-pair medians, loaded 2-core machine):
 * qwen3-42m 1.02 tok/s, 1.00 CPU per token (12 pairs); qwen3-tiny 1.03 and 0.93 (8 pairs).
 */
const due = new Set<() => void>();

/** Runs `flush` once at the end of this turn, however often it is asked for in it. */
function atTurnEnd(flush: () => void): void {
  if (due.size === 0)
    setImmediate(() => {
      const list = [...due];
      due.clear();
      for (const f of list) f();
    });
  due.add(flush);
}
