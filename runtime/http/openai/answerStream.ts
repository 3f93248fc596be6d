// The streamed OpenAI answer: SSE chunks built per choice, one write per stream per event-loop turn, a finish chunk per choice, usage on request, then [DONE].
import type { Request, Response } from 'express';
import { wantsDetail, type GenerateHandle, type GenerateOutcome } from '../generateParams.ts';
import type { StreamToken } from '../streamToken.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import { TokenRouterError } from '../../errors.ts';
import { spentInCluster } from '../../eval/entryProfile.ts';
import { sendError, toHttpError } from '../httpErrors.ts';
import { onClientGone, startAll, type AnswerContext } from './choices.ts';
import type { Kind, Plan } from './requestPlan.ts';
import { attribution, chatLogprob, completionLogprobs, finishReasonOf, plainTokens, usageOf } from './responseShapes.ts';
import { AnswerOutput, type OutputDelta, type OutputSpec } from './answerOutput.ts';
import type { CallDelta } from './toolCallParser.ts';

/** How long a stream aborted for not reading may keep its buffer before its socket is destroyed. */
const CLOSE_GRACE_MS = 5000;
/**
 * A turn's events past this size are written at once: one huge write would leave most of it in
 * the stream's buffer (the kernel takes a socket buffer's worth) and trip streamBufferBytes for a
 * client that reads; written in pieces, a reading client drains them as they go.
 */
const WRITE_BYTES = 16 * 1024;
/** What a stream that is being read may hold past a burst, in streamBufferBytes. */
const BURST_BOUNDS = 4;

/**
 * A streamed answer as server-sent events; a request refused before its first token still gets a
 * JSON error. What the engines commit for it within one turn of the event loop goes out as one
 * write at the turn's end; after a choice's first chunk, its next waits for `plan.streamInterval`
 * tokens (the end sends what is left). Events are only ever appended, so nothing is reordered.
 */
export function answerStream(
  { service, metrics, drain, turns, onCompletionTokens }: AnswerContext,
  plan: Plan,
  res: Response,
  req: Request,
  includeUsage: boolean,
): void {
  const { kind, id, model, jobs } = plan;
  const createdAt = Math.floor(Date.now() / 1000);
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const started = performance.now();
  const base: ChunkBase = { id, object, created: createdAt, model };
  const choices = jobs.map((job) => new ChoiceChunks(service, kind, base, job.index, job.echo, plan.logprobs, plan.output));
  const lastChunkAt = jobs.map(() => 0);
  const outs: GenerateOutcome[] = new Array(jobs.length);
  let finished = 0;
  let over = false;
  /** Events of this turn not yet written. */
  let buf = '';
  const bound = service.config.limits.streamBufferBytes;
  const append = (s: string) => {
    if (over) return;
    buf += s;
    if (buf.length >= WRITE_BYTES) writeOut();
  };
  const event = (payload: unknown) => append(`data: ${JSON.stringify(payload)}\n\n`);
  /**
   * A turn's burst (the steps of a turn in which the entry fell behind land at once) may pass the
   * bound with a client that reads. So past it, the stream goes on while the client took some of
   * it between two turns' ends (up to BURST_BOUNDS times the bound); a client that took nothing
   * over a whole turn is not reading and is cut at that turn's end, holding at most the bound and
   * two turns' output. Inside one turn the client cannot read at all (the loop is busy writing),
   * so only the hard bound is checked there.
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
  const take = (k: number) => {
    if (choices[k].hasText) {
      const now = performance.now();
      if (lastChunkAt[k]) metrics.interToken.observe((now - lastChunkAt[k]) / 1000);
      else metrics.ttft.observe((now - started) / 1000);
      lastChunkAt[k] = now;
    }
    append(choices[k].take());
  };
  /** The turn's end: the choices due a chunk add theirs, and the lot goes out in one write. */
  const flush = () => {
    if (over) return;
    choices.forEach((c, k) => {
      if (outs[k] === undefined && c.hasText && (lastChunkAt[k] === 0 || c.count >= plan.streamInterval)) take(k);
    });
    if ((buf || wroteInTurn) && !over) writeOut(true);
  };
  /** The last write: what the turn gathered, then `tail`, and the end of the response. */
  const end = (tail = '') => {
    if (res.writableEnded) return;
    if (!res.headersSent) startSse(res);
    res.end(buf + tail);
    buf = '';
  };
  let handles: GenerateHandle[] = [];
  const cancelAll = () => handles.forEach((h) => h.cancel());
  /**
   * Aborts rather than pausing: the engine cannot hold one row of a batch back, so a pause would
   * keep the request's slot and KV for as long as the client stalls. The error event goes last into
   * the buffer (a slow reader still learns why); a stalled one is cut CLOSE_GRACE_MS later.
   */
  const abortSlowClient = () => {
    over = true;
    const unsent = res.writableLength;
    cancelAll();
    metrics.slowClientAborts.inc();
    res.end(
      `data: ${JSON.stringify(toHttpError(new TokenRouterError('cancelled', `client not reading: ${unsent} bytes of this stream unsent (limits.streamBufferBytes is ${bound}); the request was cancelled`, null)).body)}\n\n`,
    );
    const cut = setTimeout(() => res.destroy(), CLOSE_GRACE_MS);
    cut.unref();
    res.once('close', () => clearTimeout(cut));
  };
  // Generation starts first: a refused request (404, 429, 503) still gets a plain JSON error.
  handles = startAll(service, plan, (k) => {
    const detail = wantsDetail(jobs[k].params);
    const topLogprobs = jobs[k].params.sampling.topLogprobs;
    return {
      onToken: (token, from, _i, signals, atHandoff, text) => {
        if (over) return;
        choices[k].add(text, from, detail ? service.streamToken(token, from, signals!, atHandoff, topLogprobs) : null);
        turns.request(flush);
      },
      onEnd: (o) => {
        metrics.observeRequest(o, started, false);
        spentInCluster(res, o.result);
        onCompletionTokens?.(o.result.tokens.length);
        if (over) return;
        if (o.finishReason === 'cancelled' || o.finishReason === 'error') {
          over = true;
          cancelAll();
          if (o.finishReason === 'cancelled') return void end();
          if (!res.headersSent) return sendError(res, o.result.error ?? new Error('failed'));
          return end(`data: ${JSON.stringify(toHttpError(o.result.error ?? new Error('failed')).body)}\n\n`);
        }
        outs[k] = o;
        // what was held back to the end (a stop string that might have formed, half a character)
        choices[k].add(o.text.slice(choices[k].shown), null, null);
        choices[k].end();
        if (choices[k].pending) take(k);
        const reason = finishReasonOf(o.finishReason, choices[k].callCount);
        event({
          ...base,
          choices: [
            kind === 'chat'
              ? { index: jobs[k].index, delta: {}, finish_reason: reason, logprobs: null }
              : { index: jobs[k].index, text: '', finish_reason: reason, logprobs: null },
          ],
          tokenrouter: attribution(o),
        });
        if (++finished < jobs.length) return turns.request(flush);
        if (includeUsage) event({ ...base, choices: [], usage: usageOf(plan.promptTokens, outs, jobs.length / plan.promptCount) });
        over = true;
        end('data: [DONE]\n\n');
      },
    };
  });
  onClientGone(req, res, cancelAll);
  // At a shutdown's deadline: an error event after what was sent (a JSON 503 if nothing was), never a bare TCP close.
  drain?.track(res, (e) => {
    if (over) return;
    over = true;
    cancelAll();
    if (!res.headersSent && !buf) return sendError(res, e);
    end(`data: ${JSON.stringify(toHttpError(e).body)}\n\n`);
  });
}

/** Headers leave with the first chunk, written right after: one write to the socket, not two. */
function startSse(res: Response): void {
  res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
}

/** What every chunk of one answer repeats: its id, object, creation time and model. */
export interface ChunkBase {
  id: string;
  object: string;
  created: number;
  model: string;
}

/**
 * What one choice committed since its last chunk: its text as read by the request's parsers
 * (answer, thought, tool calls), a count per writing model, and (with `tokenrouter_tokens` or
 * logprobs) the tokens themselves. A chunk goes out when there is something to show, so tokens
 * whose text is held back (a stop string forming, half a UTF-8 character, a tool call not closed
 * yet) ride on the next one and every chunk's `tokenrouter.models` counts the tokens it carries.
 * Each chunk is its object through JSON.stringify.
 */
export class ChoiceChunks {
  private content = '';
  private reasoning = '';
  private calls: CallDelta[] = [];
  private readonly models = new Map<string, number>();
  private tokens: StreamToken[] = [];
  /** Tokens committed since the last chunk. */
  count = 0;
  /** Tool calls sent so far (the next one's index). */
  callCount = 0;
  private first = true;
  private readonly offset: { offset: number };
  private readonly output: AnswerOutput;

  constructor(
    private readonly service: TokenRouterService,
    private readonly kind: Kind,
    private readonly base: ChunkBase,
    private readonly index: number,
    /** Completions with echo: the prompt's text leads the choice's first chunk. */
    private echo: string,
    /** Top logprobs per token the client asked for; undefined: none. */
    private readonly logprobs: number | undefined,
    spec: OutputSpec = {},
  ) {
    this.offset = { offset: echo.length };
    this.output = new AnswerOutput(spec, true);
  }

  /** Text given to the choice so far (what the end's whole text has past it was held back). */
  shown = 0;

  add(text: string, model: string | null, token: StreamToken | null): void {
    this.shown += text.length;
    if (text) this.gather(this.output.push(text));
    if (model !== null) {
      this.count++;
      this.models.set(model, (this.models.get(model) ?? 0) + 1);
    }
    if (token) this.tokens.push(token);
  }

  /** The text ended: what the parsers held back comes out. */
  end(): void {
    this.gather(this.output.end());
  }

  private gather(d: OutputDelta): void {
    this.content += d.content;
    this.reasoning += d.reasoning;
    this.calls.push(...d.calls);
  }

  /** Something the client has not seen: text, or tokens to attribute. */
  get pending(): boolean {
    return this.hasText || this.count > 0;
  }

  get hasText(): boolean {
    return this.content.length > 0 || this.reasoning.length > 0 || this.calls.length > 0 || this.echo.length > 0;
  }

  /** The pending output as SSE events (one, or more for tool calls), and the choice emptied. */
  take(): string {
    const logprobs = this.logprobsOf();
    const ext =
      this.count === 0 ? undefined : { models: Object.fromEntries(this.models), ...(this.tokens.length > 0 ? { tokens: plainTokens(this.tokens) } : {}) };
    const events: object[] = [];
    const chunk = (choice: object, withExt: boolean) => ({
      ...this.base,
      choices: [{ index: this.index, ...choice }],
      ...(withExt && ext ? { tokenrouter: ext } : {}),
    });
    if (this.kind === 'completion') {
      events.push(chunk({ text: this.echo + this.content, finish_reason: null, logprobs }, true));
    } else {
      const delta: Record<string, unknown> = this.first ? { role: 'assistant' } : {};
      if (this.content || (this.first && !this.reasoning)) delta.content = this.content === '' && this.calls.length > 0 ? null : this.content;
      if (this.reasoning) delta.reasoning_content = this.reasoning;
      if (Object.keys(delta).length > 0 || this.calls.length === 0) events.push(chunk({ delta, finish_reason: null, logprobs }, true));
      // as OpenAI streams a call: its id, type and name with empty arguments, then the arguments in pieces
      const toolDelta = (call: object) => {
        const withExt = events.length === 0;
        events.push(chunk({ delta: { tool_calls: [call] }, finish_reason: null, logprobs: withExt ? logprobs : null }, withExt));
      };
      // a call's pieces since the last chunk go out as one arguments delta
      for (let i = 0; i < this.calls.length; ) {
        const c = this.calls[i];
        if (c.id !== undefined) {
          this.callCount++;
          toolDelta({ index: c.index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } });
        }
        let text = c.arguments;
        for (i++; i < this.calls.length && this.calls[i].index === c.index && this.calls[i].id === undefined; i++) text += this.calls[i].arguments;
        if (text) toolDelta({ index: c.index, function: { arguments: text } });
      }
    }
    this.first = false;
    this.echo = '';
    this.content = '';
    this.reasoning = '';
    this.calls = [];
    this.count = 0;
    this.models.clear();
    this.tokens = [];
    return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
  }

  private logprobsOf(): unknown {
    if (this.logprobs === undefined || this.tokens.length === 0) return null;
    return this.kind === 'chat'
      ? { content: this.tokens.map((t) => chatLogprob(this.service, t)) }
      : completionLogprobs(this.service, this.tokens, this.offset);
  }
}

/**
 * One step message from an engine commits a token for many streams, and several such messages may
 * be read in the same turn; each stream's share goes out as one SSE write after all of them (as
 * vLLM's RequestOutputCollector merges deltas when the producer runs ahead of the consumer). One
 * setImmediate serves every stream of the server.
 */
export class TurnFlush {
  private readonly due = new Set<() => void>();
  private scheduled = false;

  /** Runs `flush` once at the end of this turn, however often it is asked for in it. */
  request(flush: () => void): void {
    this.due.add(flush);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const list = [...this.due];
    this.due.clear();
    for (const f of list) f();
  };
}
