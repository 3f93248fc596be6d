// OpenAI-compatible endpoints: /v1/models, /v1/completions, /v1/chat/completions, streaming as SSE.
import crypto from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import {
  chatRequestSchema,
  completionRequestSchema,
  MAX_CHOICES,
  type ChatMessage,
  type ChatRequest,
  type ChatTokenLogprob,
  type CompletionLogprobs,
  type CompletionRequest,
  type RequestAttribution,
} from '../../shared/api/openai.ts';
import { TokenRouterError } from '../errors.ts';
import type { SamplingParams } from '../runner/modelRunner.ts';
import type { GenerateHandle, GenerateOutcome, GenerateParams, GenerateSink, StreamToken, TokenRouterService } from '../serve/tokenRouterService.ts';
import { mix } from '../util/hash.ts';
import { sendError, toHttpError } from './httpErrors.ts';
import type { ServerMetrics } from './metrics.ts';
import { parseBody } from './zodToError.ts';

type Kind = 'completion' | 'chat';

/** One choice to generate: `index` as OpenAI numbers them (prompt i, choice j of n: i * n + j). */
interface Job {
  index: number;
  params: GenerateParams;
  /** completions with echo: the prompt's text, shown before the choice's own. */
  echo: string;
}

interface Plan {
  kind: Kind;
  id: string;
  model: string;
  jobs: Job[];
  /** Each distinct prompt counted once, as OpenAI counts usage for n > 1. */
  promptTokens: number;
  /** Top logprobs per token the client asked for; undefined: no logprobs. */
  logprobs: number | undefined;
  /** Non-streamed: include the per-token array (`tokenrouter_tokens: true`). */
  perToken: boolean;
}

export function openaiRoutes(service: TokenRouterService, metrics: ServerMetrics): Router {
  const r = Router();
  const created = Math.floor(Date.now() / 1000);
  const modelObject = (id: string) => ({ id, object: 'model', created, owned_by: 'tokenrouter' });

  r.get('/v1/models', (_req, res) => {
    res.json({ object: 'list', data: service.modelIds().map(modelObject) });
  });

  r.get('/v1/models/:id', (req, res) => {
    const id = String(req.params.id);
    if (service.modelIds().includes(id)) res.json(modelObject(id));
    else sendError(res, new TokenRouterError('not_found', `The model \`${id.slice(0, 200)}\` does not exist. Available: ${service.modelIds().join(', ')}`, 'model'));
  });

  r.post('/v1/completions', (req, res) => handle('completion', req, res));
  r.post('/v1/chat/completions', (req, res) => handle('chat', req, res));

  function handle(kind: Kind, req: Request, res: Response): void {
    try {
      const body = kind === 'chat' ? parseBody(chatRequestSchema, req.body) : parseBody(completionRequestSchema, req.body);
      const maxContext = Math.min(...service.infos().map((x) => x.maxContext));
      const vocab = Math.min(...service.infos().map((x) => x.vocabSize));
      const promptParam = kind === 'chat' ? 'messages' : 'prompt';
      let prompts: { ids: number[]; text: string }[];
      if (kind === 'chat') {
        refuseTextBeyondWindow(chatChars(body as ChatRequest), maxContext, 'messages');
        prompts = [{ ids: chatPrompt(service, body as ChatRequest), text: '' }];
      } else prompts = completionPrompts(service, body as CompletionRequest, maxContext, vocab);
      for (const p of prompts) {
        if (p.ids.length >= maxContext) throw new TokenRouterError('too_large', `the prompt is ${p.ids.length} tokens; the context window is ${maxContext} tokens`, promptParam);
      }
      const explicit = kind === 'chat' ? ((body as ChatRequest).max_completion_tokens ?? body.max_tokens) : body.max_tokens;
      if (explicit != null && explicit > service.config.limits.maxTokens) {
        throw new TokenRouterError('invalid_request', `max_tokens is ${explicit}; this server allows at most ${service.config.limits.maxTokens}`, 'max_tokens');
      }
      // Without max_tokens, as vLLM does: the rest of the context window, capped by the server's limit.
      const budgetFor = (promptTokens: number) => explicit ?? Math.min(service.config.limits.maxTokens, maxContext - promptTokens);
      const requested = Math.min(...prompts.map((p) => budgetFor(p.ids.length)));
      if (body.min_tokens != null && body.min_tokens > requested) {
        throw new TokenRouterError('invalid_request', `min_tokens (${body.min_tokens}) is more than max_tokens (${requested})`, 'min_tokens');
      }
      const n = body.n ?? 1;
      if (prompts.length * n > MAX_CHOICES) throw new TokenRouterError('invalid_request', `${prompts.length} prompts times n = ${n} is ${prompts.length * n} choices; at most ${MAX_CHOICES}`, 'n');
      const logprobs = kind === 'chat' ? ((body as ChatRequest).logprobs === true ? ((body as ChatRequest).top_logprobs ?? 0) : undefined) : ((body as CompletionRequest).logprobs ?? undefined);
      const echo = kind === 'completion' && (body as CompletionRequest).echo === true;
      if (echo && logprobs !== undefined) throw new TokenRouterError('invalid_request', 'echo with logprobs would need the prompt tokens\' logprobs, which this server does not compute', 'echo');
      const logitBias: [number, number][] = Object.entries(body.logit_bias ?? {}).map(([k, v]) => [Number(k), v]);
      const outside = logitBias.find(([t]) => t >= vocab);
      if (outside) throw new TokenRouterError('invalid_request', `logit_bias token id ${outside[0]} is outside the vocabulary (size ${vocab})`, 'logit_bias');
      const frequency = body.frequency_penalty ?? 0;
      const presence = body.presence_penalty ?? 0;
      const penalised = frequency !== 0 || presence !== 0 || logitBias.length > 0;
      const seed = (body.seed ?? crypto.randomInt(2 ** 31)) >>> 0;
      const stop = (body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop).filter((x) => x.length > 0);
      const jobs: Job[] = [];
      prompts.forEach((p, i) => {
        for (let j = 0; j < n; j++) {
          const sampling: SamplingParams = { temperature: body.temperature ?? 1, topP: body.top_p ?? 1, topK: 0, seed: choiceSeed(seed, j) };
          if (logprobs !== undefined) sampling.topLogprobs = logprobs;
          if (penalised) sampling.penalties = { frequency, presence, logitBias, outputFrom: p.ids.length };
          jobs.push({
            index: i * n + j,
            echo: echo ? p.text : '',
            params: { model: body.model, promptIds: p.ids, maxTokens: budgetFor(p.ids.length), minTokens: body.ignore_eos ? budgetFor(p.ids.length) : (body.min_tokens ?? 0), sampling, stop, draftIr: body.tokenrouter_ir },
          });
        }
      });
      const id = requestIdOf(req) ?? `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${crypto.randomUUID()}`;
      // One id from the response through the trace and the timeline; choice k of several is id-k there.
      jobs.forEach((job, k) => (job.params.requestId = jobs.length === 1 ? id : `${id}-${k}`));
      res.set('X-Request-Id', id);
      const plan: Plan = { kind, id, model: body.model, jobs, promptTokens: prompts.reduce((a, p) => a + p.ids.length, 0), logprobs, perToken: body.tokenrouter_tokens === true };
      if (body.stream) stream(plan, res, req, body.stream_options?.include_usage === true);
      else unary(plan, res, req);
    } catch (e) {
      sendError(res, e);
    }
  }

  /** Starts every choice; if one is refused (429, 503, 404) the ones started are cancelled and the refusal thrown. */
  function startAll(plan: Plan, sinkFor: (k: number) => GenerateSink): GenerateHandle[] {
    const handles: GenerateHandle[] = [];
    try {
      plan.jobs.forEach((job, k) => handles.push(service.generate(job.params, sinkFor(k))));
    } catch (e) {
      for (const h of handles) h.cancel();
      throw e;
    }
    return handles;
  }

  function unary(plan: Plan, res: Response, req: Request): void {
    const { kind, jobs } = plan;
    const tokens: StreamToken[][] = jobs.map(() => []);
    const outs: GenerateOutcome[] = new Array(jobs.length);
    const started = performance.now();
    let done = 0;
    let over = false;
    let handles: GenerateHandle[] = [];
    const cancelAll = () => handles.forEach((h) => h.cancel());
    const perTokenOf = (ts: StreamToken[]) => (plan.perToken ? { tokens: plainTokens(ts) } : {});
    handles = startAll(plan, (k) => ({
      onDelta: (ts) => tokens[k].push(...ts),
      onEnd: (o) => {
        metrics.observeRequest(o, started);
        if (over) return;
        if (o.finishReason === 'cancelled' || o.finishReason === 'error') {
          // One choice lost fails the request: the others are cancelled, not left running unanswered.
          over = true;
          cancelAll();
          if (o.finishReason === 'error') sendError(res, o.result.error ?? new Error('failed'));
          return;
        }
        outs[k] = o;
        if (++done < jobs.length) return;
        const choices = jobs.map((job, i) => {
          const o = outs[i];
          const lp = plan.logprobs === undefined ? null : kind === 'chat' ? { content: tokens[i].map((t) => chatLogprob(service, t)) } : completionLogprobs(service, tokens[i], { offset: job.echo.length });
          const choice = kind === 'chat' ? { index: job.index, message: { role: 'assistant', content: o.text }, finish_reason: o.finishReason, logprobs: lp } : { index: job.index, text: job.echo + o.text, finish_reason: o.finishReason, logprobs: lp };
          return jobs.length === 1 ? choice : { ...choice, tokenrouter: { ...attribution(o), ...perTokenOf(tokens[i]) } };
        });
        res.json({
          id: plan.id,
          object: kind === 'chat' ? 'chat.completion' : 'text_completion',
          created: Math.floor(Date.now() / 1000),
          model: plan.model,
          choices,
          usage: usageOf(plan.promptTokens, outs),
          tokenrouter: jobs.length === 1 ? { ...attribution(outs[0]), ...perTokenOf(tokens[0]) } : sumAttribution(outs),
        });
      },
    }));
    onClientGone(req, res, cancelAll);
  }

  function stream(plan: Plan, res: Response, req: Request, includeUsage: boolean): void {
    const { kind, id, model, jobs } = plan;
    const createdAt = Math.floor(Date.now() / 1000);
    const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const started = performance.now();
    const state = jobs.map((job) => ({ first: true, lastChunkAt: 0, echo: job.echo, offset: { offset: job.echo.length } }));
    const outs: GenerateOutcome[] = new Array(jobs.length);
    let finished = 0;
    let over = false;
    const write = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
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
    // Generation starts first: a refused request (404, 429, 503) still gets a plain JSON error.
    handles = startAll(plan, (k) => ({
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
        const done = { id, object, created: createdAt, model, choices: [kind === 'chat' ? { index: jobs[k].index, delta: {}, finish_reason: o.finishReason, logprobs: null } : { index: jobs[k].index, text: '', finish_reason: o.finishReason, logprobs: null }], tokenrouter: attribution(o) };
        write(done);
        if (++finished < jobs.length) return;
        if (includeUsage) write({ id, object, created: createdAt, model, choices: [], usage: usageOf(plan.promptTokens, outs) });
        res.write('data: [DONE]\n\n');
        res.end();
      },
    }));
    onClientGone(req, res, cancelAll);
  }

  return r;
}

/** Choice 0 keeps the request's seed (n = 1 draws as before); choice j > 0 gets a seed hashed from it, so choices differ and replay. */
export function choiceSeed(seed: number, j: number): number {
  return j === 0 ? seed >>> 0 : mix(seed >>> 0, j) >>> 0;
}

/** OpenAI reports log(0) as -9999 (JSON has no -Infinity). */
function logOf(p: number): number {
  return p > 0 ? Math.max(Math.log(p), -9999) : -9999;
}

function bytesOf(s: string): number[] {
  return Array.from(Buffer.from(s, 'utf8'));
}

function chatLogprob(service: TokenRouterService, t: StreamToken): ChatTokenLogprob {
  const lp = t.logprobs!;
  return {
    token: t.text,
    logprob: logOf(lp.prob),
    bytes: bytesOf(t.text),
    top_logprobs: lp.topIds.map((tid, i) => {
      const s = service.tokenizer.decode([tid]);
      return { token: s, logprob: logOf(lp.topProbs[i]), bytes: bytesOf(s) };
    }),
    tokenrouter_model: t.model,
  };
}

/** Legacy shape; `at.offset` carries the text offset across a stream's chunks. The sampled token is always in its top_logprobs, as OpenAI documents. */
function completionLogprobs(service: TokenRouterService, ts: readonly StreamToken[], at: { offset: number }): CompletionLogprobs {
  return {
    tokens: ts.map((t) => t.text),
    token_logprobs: ts.map((t) => logOf(t.logprobs!.prob)),
    top_logprobs: ts.map((t) => {
      const lp = t.logprobs!;
      const entries: [string, number][] = lp.topIds.map((tid, i) => [service.tokenizer.decode([tid]), logOf(lp.topProbs[i])]);
      if (!lp.topIds.includes(t.id)) entries.push([t.text, logOf(lp.prob)]);
      return Object.fromEntries(entries);
    }),
    text_offset: ts.map((t) => {
      const o = at.offset;
      at.offset += t.text.length;
      return o;
    }),
    tokenrouter_models: ts.map((t) => t.model),
  };
}

/** The tokenrouter extension's token list, without the logprobs OpenAI's own fields already carry. */
function plainTokens(ts: readonly StreamToken[]): Omit<StreamToken, 'logprobs'>[] {
  return ts.map(({ logprobs: _lp, ...t }) => t);
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

function startSse(res: Response): void {
  res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  res.flushHeaders();
}

/** Cancels the request everywhere (pending-return state included) when the client hangs up first. */
function onClientGone(req: Request, res: Response, cancel: () => void): void {
  res.on('close', () => {
    if (!res.writableFinished) cancel();
  });
  req.on('aborted', cancel);
}

function usageOf(promptTokens: number, outs: readonly GenerateOutcome[]) {
  const completion = outs.reduce((a, o) => a + o.result.tokens.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

function attribution(o: GenerateOutcome): RequestAttribution {
  return { algorithm: o.algorithm, version: o.version, tokens_by_model: o.result.tokensByModel, handoffs: o.result.handoffs, discarded_tokens: o.result.discarded };
}

/** Several choices: their attributions summed (each choice carries its own too). */
function sumAttribution(outs: readonly GenerateOutcome[]): RequestAttribution {
  const byModel: Record<string, number> = {};
  for (const o of outs) for (const [m, c] of Object.entries(o.result.tokensByModel)) byModel[m] = (byModel[m] ?? 0) + c;
  return { algorithm: outs[0].algorithm, version: outs[0].version, tokens_by_model: byModel, handoffs: outs.reduce((a, o) => a + o.result.handoffs, 0), discarded_tokens: outs.reduce((a, o) => a + o.result.discarded, 0) };
}

/**
 * Encoding runs on the event loop every client shares and costs time linear in the text (about 5 µs
 * a character with the bundled tokenizer: a 1 MB prompt stalled all streams for seconds). No
 * tokenizer averages anywhere near MAX_CHARS_PER_TOKEN characters a token, so longer text cannot fit
 * the context window and is refused before it is encoded.
 */
const MAX_CHARS_PER_TOKEN = 32;

function refuseTextBeyondWindow(chars: number, maxContext: number, param: string): void {
  if (chars > maxContext * MAX_CHARS_PER_TOKEN) {
    throw new TokenRouterError('too_large', `the prompt is ${chars} characters, far more than the context window of ${maxContext} tokens can hold`, param);
  }
}

function chatChars(body: ChatRequest): number {
  let n = 0;
  for (const m of body.messages) n += messageText(m).length;
  return n;
}

/** Every prompt of a completions request as ids (and its text, for echo); each is checked as a single prompt was. */
function completionPrompts(service: TokenRouterService, body: CompletionRequest, maxContext: number, vocab: number): { ids: number[]; text: string }[] {
  const p = body.prompt;
  const list: (string | number[])[] = typeof p === 'string' ? [p] : p.length > 0 && typeof p[0] === 'number' ? [p as number[]] : (p as (string | number[])[]);
  return list.map((x, i) => {
    const param = list.length > 1 ? `prompt.${i}` : 'prompt';
    if (typeof x === 'string') {
      if (x.length === 0) throw new TokenRouterError('invalid_request', 'prompt is empty', param);
      refuseTextBeyondWindow(x.length, maxContext, param);
      return { ids: service.tokenizer.encode(x, true), text: x };
    }
    const bad = x.find((t) => t >= vocab);
    if (bad !== undefined) throw new TokenRouterError('invalid_request', `prompt token id ${bad} is outside the vocabulary (size ${vocab})`, param);
    return { ids: x, text: body.echo ? service.tokenizer.decode(x) : '' };
  });
}

function messageText(m: ChatMessage): string {
  // An assistant message may have no content (OpenAI allows null there): it renders as an empty turn.
  return m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((c) => c.text).join('');
}

function chatPrompt(service: TokenRouterService, body: ChatRequest): number[] {
  const messages = body.messages.map((m) => ({ role: m.role, content: messageText(m) }));
  if (messages.every((m) => m.content.trim() === '')) throw new TokenRouterError('invalid_request', 'messages have no content', 'messages');
  return service.tokenizer.encodeChat(messages, true);
}
