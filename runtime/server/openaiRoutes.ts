// OpenAI-compatible endpoints: /v1/models, /v1/completions, /v1/chat/completions, streaming as SSE.
import crypto from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { chatRequestSchema, completionRequestSchema, type ChatRequest, type CompletionRequest, type RequestAttribution, type TokenAttribution } from '../../shared/api/openai.ts';
import { TokenRouterError } from '../errors.ts';
import type { GenerateOutcome, StreamToken, TokenRouterService } from '../serve/tokenRouterService.ts';
import { sendError, toHttpError } from './httpErrors.ts';
import type { ServerMetrics } from './metrics.ts';
import { parseBody } from './zodToError.ts';

type Kind = 'completion' | 'chat';

export function openaiRoutes(service: TokenRouterService, metrics: ServerMetrics): Router {
  const r = Router();
  const created = Math.floor(Date.now() / 1000);

  r.get('/v1/models', (_req, res) => {
    res.json({ object: 'list', data: service.modelIds().map((id) => ({ id, object: 'model', created, owned_by: 'tokenrouter' })) });
  });

  r.post('/v1/completions', (req, res) => handle('completion', req, res));
  r.post('/v1/chat/completions', (req, res) => handle('chat', req, res));

  function handle(kind: Kind, req: Request, res: Response): void {
    try {
      const body = kind === 'chat' ? parseBody(chatRequestSchema, req.body) : parseBody(completionRequestSchema, req.body);
      const maxContext = Math.min(...[...service.runners.values()].map((x) => x.info.maxContext));
      refuseTextBeyondWindow(kind === 'chat' ? chatChars(body as ChatRequest) : completionChars(body as CompletionRequest), maxContext, kind === 'chat' ? 'messages' : 'prompt');
      const promptIds = kind === 'chat' ? chatPrompt(service, body as ChatRequest) : completionPrompt(service, body as CompletionRequest);
      if (promptIds.length >= maxContext) {
        throw new TokenRouterError('too_large', `the prompt is ${promptIds.length} tokens; the context window is ${maxContext} tokens`, kind === 'chat' ? 'messages' : 'prompt');
      }
      const requested = (kind === 'chat' ? ((body as ChatRequest).max_completion_tokens ?? body.max_tokens) : body.max_tokens) ?? 16;
      if (requested > service.config.limits.maxTokens) {
        throw new TokenRouterError('invalid_request', `max_tokens is ${requested}; this server allows at most ${service.config.limits.maxTokens}`, 'max_tokens');
      }
      if (body.min_tokens != null && body.min_tokens > requested) {
        throw new TokenRouterError('invalid_request', `min_tokens (${body.min_tokens}) is more than max_tokens (${requested})`, 'min_tokens');
      }
      const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
      const params = {
        model: body.model,
        promptIds,
        maxTokens: requested,
        minTokens: body.ignore_eos ? requested : (body.min_tokens ?? 0),
        sampling: { temperature: body.temperature ?? 1, topP: body.top_p ?? 1, topK: 0, seed: (body.seed ?? crypto.randomInt(2 ** 31)) >>> 0 },
        stop: stop.filter((s) => s.length > 0),
        draftIr: body.tokenrouter_ir,
      };
      const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${crypto.randomUUID()}`;
      if (body.stream) stream(kind, id, body.model, params, res, req, body.stream_options?.include_usage === true);
      else unary(kind, id, body.model, params, res, req);
    } catch (e) {
      sendError(res, e);
    }
  }

  function unary(kind: Kind, id: string, model: string, params: Parameters<TokenRouterService['generate']>[0], res: Response, req: Request): void {
    const tokens: TokenAttribution[] = [];
    const started = performance.now();
    const h = service.generate(params, {
      onDelta: (ts) => tokens.push(...ts),
      onEnd: (o) => {
        metrics.observeRequest(o, started);
        if (o.finishReason === 'cancelled') return;
        if (o.finishReason === 'error') return sendError(res, o.result.error ?? new Error('failed'));
        const usage = usageOf(params.promptIds.length, o);
        const choice = kind === 'chat' ? { index: 0, message: { role: 'assistant', content: o.text }, finish_reason: o.finishReason, logprobs: null } : { index: 0, text: o.text, finish_reason: o.finishReason, logprobs: null };
        res.json({
          id,
          object: kind === 'chat' ? 'chat.completion' : 'text_completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [choice],
          usage,
          tokenrouter: { ...attribution(o), tokens },
        });
      },
    });
    onClientGone(req, res, () => h.cancel());
  }

  function stream(kind: Kind, id: string, model: string, params: Parameters<TokenRouterService['generate']>[0], res: Response, req: Request, includeUsage: boolean): void {
    const createdAt = Math.floor(Date.now() / 1000);
    const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const started = performance.now();
    let first = true;
    let lastChunkAt = 0;
    const write = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
    const chunk = (text: string, tokens: StreamToken[], finish: string | null) => {
      const choice =
        kind === 'chat'
          ? { index: 0, delta: first ? { role: 'assistant', content: text } : text ? { content: text } : {}, finish_reason: finish, logprobs: null }
          : { index: 0, text, finish_reason: finish, logprobs: null };
      first = false;
      write({ id, object, created: createdAt, model, choices: [choice], tokenrouter: { tokens } });
    };
    // Generation starts first: a refused request (404, 429, 503) still gets a plain JSON error.
    const h = service.generate(params, {
      onDelta: (tokens, text) => {
        if (!res.headersSent) startSse(res);
        const now = performance.now();
        if (text) {
          if (lastChunkAt) metrics.interToken.observe((now - lastChunkAt) / 1000);
          else metrics.ttft.observe((now - started) / 1000);
          lastChunkAt = now;
        }
        chunk(text, tokens, null);
      },
      onEnd: (o) => {
        metrics.observeRequest(o, started, false);
        if (o.finishReason === 'cancelled') return void res.end();
        if (!res.headersSent) {
          if (o.finishReason === 'error') return sendError(res, o.result.error ?? new Error('failed'));
          startSse(res);
        }
        if (o.finishReason === 'error') {
          write(toHttpError(o.result.error ?? new Error('failed')).body);
          return void res.end();
        }
        const done = { id, object, created: createdAt, model, choices: [kind === 'chat' ? { index: 0, delta: {}, finish_reason: o.finishReason, logprobs: null } : { index: 0, text: '', finish_reason: o.finishReason, logprobs: null }], tokenrouter: attribution(o) };
        write(done);
        if (includeUsage) write({ id, object, created: createdAt, model, choices: [], usage: usageOf(params.promptIds.length, o) });
        res.write('data: [DONE]\n\n');
        res.end();
      },
    });
    onClientGone(req, res, () => h.cancel());
  }

  return r;
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

function usageOf(promptTokens: number, o: GenerateOutcome) {
  const completion = o.result.tokens.length;
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

function attribution(o: GenerateOutcome): RequestAttribution {
  return { algorithm: o.algorithm, version: o.version, tokens_by_model: o.result.tokensByModel, handoffs: o.result.handoffs, discarded_tokens: o.result.discarded };
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

function completionChars(body: CompletionRequest): number {
  const p = body.prompt;
  return typeof p === 'string' ? p.length : typeof p[0] === 'string' ? p[0].length : 0;
}

function chatChars(body: ChatRequest): number {
  let n = 0;
  for (const m of body.messages) n += typeof m.content === 'string' ? m.content.length : m.content.reduce((a, c) => a + c.text.length, 0);
  return n;
}

function completionPrompt(service: TokenRouterService, body: CompletionRequest): number[] {
  const p = body.prompt;
  if (typeof p === 'string' || typeof p[0] === 'string') {
    const text = typeof p === 'string' ? p : (p[0] as string);
    if (text.length === 0) throw new TokenRouterError('invalid_request', 'prompt is empty', 'prompt');
    return service.tokenizer.encode(text, true);
  }
  const ids = p as number[];
  const vocab = Math.min(...[...service.runners.values()].map((r) => r.info.vocabSize));
  const bad = ids.find((t) => t >= vocab);
  if (bad !== undefined) throw new TokenRouterError('invalid_request', `prompt token id ${bad} is outside the vocabulary (size ${vocab})`, 'prompt');
  return ids;
}

function chatPrompt(service: TokenRouterService, body: ChatRequest): number[] {
  const messages = body.messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : m.content.map((c) => c.text).join('') }));
  if (messages.every((m) => m.content.trim() === '')) throw new TokenRouterError('invalid_request', 'messages have no content', 'messages');
  return service.tokenizer.encodeChat(messages, true);
}
