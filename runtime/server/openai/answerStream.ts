// The streamed OpenAI answer: SSE chunks per delta, a finish chunk per choice, usage on request, then [DONE].
import type { Request, Response } from 'express';
import type { GenerateHandle, GenerateOutcome, StreamToken } from '../../serve/tokenRouterService.ts';
import { TokenRouterError } from '../../errors.ts';
import { sendError, toHttpError } from '../httpErrors.ts';
import { onClientGone, startAll, type AnswerContext } from './choices.ts';
import type { Plan } from './requestPlan.ts';
import { attribution, chatLogprob, completionLogprobs, plainTokens, usageOf } from './responseShapes.ts';

/** How long a stream aborted for not reading may keep its buffer before its socket is destroyed. */
const CLOSE_GRACE_MS = 5000;

/** A streamed answer as server-sent events; a request refused before its first token still gets a JSON error. */
export function answerStream({ service, metrics, drain, onCompletionTokens }: AnswerContext, plan: Plan, res: Response, req: Request, includeUsage: boolean): void {
  const { kind, id, model, jobs } = plan;
  const createdAt = Math.floor(Date.now() / 1000);
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const started = performance.now();
  const state = jobs.map((job) => ({ first: true, lastChunkAt: 0, echo: job.echo, offset: { offset: job.echo.length } }));
  const outs: GenerateOutcome[] = new Array(jobs.length);
  let finished = 0;
  let over = false;
  const bound = service.config.limits.streamBufferBytes;
  const write = (payload: unknown) => {
    res.write(`data: ${JSON.stringify(payload)}\n\n`);
    if (!over && res.writableLength > bound) abortSlowClient();
  };
  const chunk = (k: number, text: string, tokens: StreamToken[], finish: string | null, ext: unknown) => {
    const st = state[k];
    const index = jobs[k].index;
    // completions with echo: the prompt's text leads the choice's first chunk
    if (st.echo) {
      text = st.echo + text;
      st.echo = '';
    }
    const lp = plan.logprobs === undefined || tokens.length === 0 ? null : kind === 'chat' ? { content: tokens.map((t) => chatLogprob(service, t)) } : completionLogprobs(service, tokens, st.offset);
    const choice =
      kind === 'chat'
        ? { index, delta: st.first ? { role: 'assistant', content: text } : text ? { content: text } : {}, finish_reason: finish, logprobs: lp }
        : { index, text, finish_reason: finish, logprobs: lp };
    st.first = false;
    write({ id, object, created: createdAt, model, choices: [choice], tokenrouter: ext });
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
    res.write(`data: ${JSON.stringify(toHttpError(new TokenRouterError('cancelled', `client not reading: ${unsent} bytes of this stream unsent (limits.streamBufferBytes is ${bound}); the request was cancelled`, null)).body)}\n\n`);
    res.end();
    const cut = setTimeout(() => res.destroy(), CLOSE_GRACE_MS);
    cut.unref();
    res.once('close', () => clearTimeout(cut));
  };
  // Generation starts first: a refused request (404, 429, 503) still gets a plain JSON error.
  handles = startAll(service, plan, (k) => ({
    onDelta: (tokens, text) => {
      if (over) return;
      if (!res.headersSent) startSse(res);
      const now = performance.now();
      const st = state[k];
      if (text) {
        if (st.lastChunkAt) metrics.interToken.observe((now - st.lastChunkAt) / 1000);
        else metrics.ttft.observe((now - started) / 1000);
        st.lastChunkAt = now;
      }
      chunk(k, text, tokens, null, { tokens: plainTokens(tokens) });
    },
    onEnd: (o) => {
      metrics.observeRequest(o, started, false);
      onCompletionTokens?.(o.result.tokens.length);
      if (over) return;
      if (o.finishReason === 'cancelled' || o.finishReason === 'error') {
        over = true;
        cancelAll();
        if (o.finishReason === 'cancelled') return void res.end();
        if (!res.headersSent) return sendError(res, o.result.error ?? new Error('failed'));
        write(toHttpError(o.result.error ?? new Error('failed')).body);
        return void res.end();
      }
      if (!res.headersSent) startSse(res);
      outs[k] = o;
      if (state[k].echo) chunk(k, '', [], null, { tokens: [] });
      if (over) return;
      const done = { id, object, created: createdAt, model, choices: [kind === 'chat' ? { index: jobs[k].index, delta: {}, finish_reason: o.finishReason, logprobs: null } : { index: jobs[k].index, text: '', finish_reason: o.finishReason, logprobs: null }], tokenrouter: attribution(o) };
      write(done);
      if (++finished < jobs.length || over) return;
      if (includeUsage) write({ id, object, created: createdAt, model, choices: [], usage: usageOf(plan.promptTokens, outs) });
      if (over) return;
      res.write('data: [DONE]\n\n');
      res.end();
    },
  }));
  onClientGone(req, res, cancelAll);
  // At a shutdown's deadline: an error event after what was sent (a JSON 503 if nothing was), never a bare TCP close.
  drain?.track(res, (e) => {
    if (over) return;
    over = true;
    cancelAll();
    if (!res.headersSent) return sendError(res, e);
    write(toHttpError(e).body);
    res.end();
  });
}

/** Headers leave with the first chunk, written right after: one write to the socket, not two. */
function startSse(res: Response): void {
  res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
}

