// The streamed OpenAI answer: SSE chunks per delta, a finish chunk per choice, usage on request, then [DONE].
import type { Request, Response } from 'express';
import type { GenerateHandle, GenerateOutcome } from '../../serve/tokenRouterService.ts';
import { TokenRouterError } from '../../errors.ts';
import { sendError, toHttpError } from '../httpErrors.ts';
import { onClientGone, startAll, type AnswerContext } from './choices.ts';
import type { Plan } from './requestPlan.ts';
import { ChoiceChunks, chunkHead } from './choiceChunks.ts';
import { attribution, usageOf } from './responseShapes.ts';

/** How long a stream aborted for not reading may keep its buffer before its socket is destroyed. */
const CLOSE_GRACE_MS = 5000;

/** A streamed answer as server-sent events; a request refused before its first token still gets a JSON error. */
export function answerStream({ service, metrics, drain, onCompletionTokens }: AnswerContext, plan: Plan, res: Response, req: Request, includeUsage: boolean): void {
  const { kind, id, model, jobs } = plan;
  const createdAt = Math.floor(Date.now() / 1000);
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const started = performance.now();
  const head = chunkHead(kind, id, model, createdAt);
  const choices = jobs.map((job) => new ChoiceChunks(service, kind, head, job.index, job.echo, plan.logprobs));
  const lastChunkAt = jobs.map(() => 0);
  const outs: GenerateOutcome[] = new Array(jobs.length);
  let finished = 0;
  let over = false;
  const bound = service.config.limits.streamBufferBytes;
  const writeRaw = (event: string) => {
    res.write(event);
    if (!over && res.writableLength > bound) abortSlowClient();
  };
  const write = (payload: unknown) => writeRaw(`data: ${JSON.stringify(payload)}\n\n`);
  /** Choice k's pending output as one chunk; content chunks feed the latency histograms. */
  const send = (k: number) => {
    if (!res.headersSent) startSse(res);
    if (choices[k].hasText) {
      const now = performance.now();
      if (lastChunkAt[k]) metrics.interToken.observe((now - lastChunkAt[k]) / 1000);
      else metrics.ttft.observe((now - started) / 1000);
      lastChunkAt[k] = now;
    }
    writeRaw(choices[k].take());
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
    onDelta: (text, from, token) => {
      if (over) return;
      choices[k].add(text, from, token);
      if (choices[k].hasText) send(k);
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
      if (choices[k].pending) send(k);
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

