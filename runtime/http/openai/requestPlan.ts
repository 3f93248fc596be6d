// One OpenAI request, checked and planned into one job per choice (prompt ids, token budget, sampling), and the jobs run on the cluster together.
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { type ChatRequest, MAX_CHOICES } from '../../../shared/api/openai.ts';
import type { CompletionRequest } from '../../../shared/api/openaiCompletions.ts';
import type { Constraint } from '../../../shared/protocol/constraint.ts';
import type { RequestHandle } from '../../entry/cluster.ts';
import type { RequestResult, TokenListener } from '../../entry/requestState.ts';
import { TokenRouterError } from '../../errors.ts';
import { spentInCluster } from '../../eval/entryProfile.ts';
import type { GenerationDefaults } from '../../runner/modelFolder.ts';
import type { SamplingParams } from '../../runner/modelRunner.ts';
import { mix } from '../../util/hash.ts';
import { messageText } from '../chatPrompts.ts';
import type { Drain } from '../drain.ts';
import { type StreamToken, streamToken } from '../streamToken.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import type { OutputSpec } from './answerOutput.ts';
import { constraintOf, type FieldGrammar, requestedGrammar } from './constraintPlan.ts';
import { drawAdjustments } from './drawAdjustments.ts';
import { completionPrompts, refuseTextBeyondWindow } from './promptIds.ts';
import { thoughtAtStart } from './reasoningParser.ts';
import { planTools } from './toolPlan.ts';

export type Kind = 'completion' | 'chat';

/** One choice to generate, at its index as OpenAI numbers them (prompt i, choice j of n: i * n + j). */
export interface Job {
  params: GenerateParams;
  /** completions with echo: the prompt's text, shown before the choice's own. */
  echo: string;
}

export interface Plan {
  kind: Kind;
  id: string;
  model: string;
  jobs: Job[];
  /** Each distinct prompt counted once, as OpenAI counts usage for n > 1. */
  promptTokens: number;
  promptCount: number;
  /** Top logprobs per token the client asked for; undefined: no logprobs. */
  logprobs: number | undefined;
  /** Include the per-token array (`tokenrouter_tokens: true`): in the answer, or in each streamed chunk. */
  perToken: boolean;
  /** Streamed: committed tokens per chunk after the first (the request's stream_interval, else the server's). */
  streamInterval: number;
  /** How each choice's text is read: thought, answer and tool calls. */
  output: OutputSpec;
  /** The request's constraint, and the field it came from: checked against every model's vocabulary before anything is queued. */
  constraint?: { constraint: Constraint; param: string };
  /** Grammars to compile before queueing besides the constraint (tools' parameter schemas), each refused by its field. */
  checks: FieldGrammar[];
}

const refuse = (param: string, message: string) => new TokenRouterError('invalid_request', message, param);

/** Checks a parsed request against the models and limits and turns it into one job per choice. Throws TokenRouterError. */
export function planRequest(service: TokenRouterService, kind: Kind, body: ChatRequest | CompletionRequest, requestId: string | undefined): Plan {
  const limits = service.config.limits;
  const maxContext = Math.min(...service.infos().map((x) => x.maxContext));
  const vocab = Math.min(...service.infos().map((x) => x.vocabSize));
  const chat = kind === 'chat' ? (body as ChatRequest) : null;
  const completion = kind === 'completion' ? (body as CompletionRequest) : null;
  // the model an answer starts on (the algorithm's entry model): its tool-call and reasoning formats and its sampling defaults hold for the answer
  const { algorithm } = service.algorithms.resolve(body.model, body.tokenrouter_ir);
  const entryName = algorithm.models[algorithm.entry - 1];
  const entry = service.config.models.find((m) => m.name === entryName);
  let grammar = requestedGrammar(body);
  const output: OutputSpec = {};
  const checks: FieldGrammar[] = [];
  let prompts: { ids: number[]; text: string }[];
  if (chat) {
    refuseTextBeyondWindow(
      chat.messages.reduce((n, m) => n + messageText(m).length, 0),
      maxContext,
      'messages',
    );
    const tools = planTools(chat, entry?.toolCallParser, entry?.name ?? body.model);
    if (tools.grammar && grammar)
      throw refuse(tools.grammar.param, `${tools.grammar.param} with a call required and ${grammar.param} both constrain the output; give one`);
    grammar ??= tools.grammar;
    if (tools.parser) output.tools = tools.parser;
    checks.push(...tools.schemas);
    prompts = [{ ids: service.chatPrompts.forRequest(chat, tools.templateTools, tools.parser, entry?.name ?? body.model), text: '' }];
    // completions have no template around them: their text is the model's as it is
    if (entry?.reasoningParser)
      output.reasoning = { parser: entry.reasoningParser, at: thoughtAtStart(service.tokenizer.decode(prompts[0].ids.slice(-8), false)) };
  } else prompts = completionPrompts(service, completion!, maxContext, vocab);
  const constraint = grammar && constraintOf(service.tokenizer, grammar, output);
  const promptParam = chat ? 'messages' : 'prompt';
  // 400, as vLLM answers a prompt past max_model_len: the request is wrong for this model, not too big to read
  for (const p of prompts)
    if (p.ids.length >= maxContext) throw refuse(promptParam, `the prompt is ${p.ids.length} tokens; the context window is ${maxContext} tokens`);
  const explicit = chat?.max_completion_tokens ?? body.max_tokens;
  if (explicit != null && explicit > limits.maxTokens) throw refuse('max_tokens', `max_tokens is ${explicit}; this server allows at most ${limits.maxTokens}`);
  // Without max_tokens, as vLLM does: the rest of the context window, capped by the server's limit.
  const budgetFor = (promptTokens: number) => explicit ?? Math.min(limits.maxTokens, maxContext - promptTokens);
  const requested = Math.min(...prompts.map((p) => budgetFor(p.ids.length)));
  if (body.min_tokens != null && body.min_tokens > requested)
    throw refuse('min_tokens', `min_tokens (${body.min_tokens}) is more than max_tokens (${requested})`);
  const n = body.n ?? 1;
  if (prompts.length * n > MAX_CHOICES) throw refuse('n', `${prompts.length} prompts times n = ${n} is ${prompts.length * n} choices; at most ${MAX_CHOICES}`);
  const logprobs = chat ? (chat.logprobs === true ? (chat.top_logprobs ?? 0) : undefined) : (completion!.logprobs ?? undefined);
  const echo = completion?.echo === true;
  const adjustments = drawAdjustments(body, vocab);
  const seed = (body.seed ?? crypto.randomInt(2 ** 31)) >>> 0;
  const stop = (body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop).filter((x) => x.length > 0);
  const base = samplingFor(body, (entryName !== undefined && service.folders.get(entryName)?.generation) || {});
  const id = requestId ?? `${chat ? 'chatcmpl' : 'cmpl'}-${crypto.randomUUID()}`;
  const jobs = prompts.flatMap((p, i) =>
    Array.from({ length: n }, (_, j): Job => {
      // choice 0 keeps the request's seed; choice j > 0 gets one hashed from it, so choices differ and replay
      const sampling: SamplingParams = { ...base, ...adjustments(p.ids.length), seed: j === 0 ? seed : mix(seed, j) >>> 0 };
      if (logprobs !== undefined) sampling.topLogprobs = logprobs;
      const params: GenerateParams = {
        model: body.model,
        promptIds: p.ids,
        maxTokens: budgetFor(p.ids.length),
        minTokens: body.ignore_eos ? budgetFor(p.ids.length) : (body.min_tokens ?? 0),
        sampling,
        stop,
        draftIr: body.tokenrouter_ir,
        perToken: body.tokenrouter_tokens === true,
        // one id from the response through the trace and the timeline; choice k of several is id-k there
        requestId: prompts.length * n === 1 ? id : `${id}-${i * n + j}`,
        ...(constraint ? { constraint: constraint.constraint } : {}),
      };
      return { echo: echo ? p.text : '', params };
    }),
  );
  return {
    kind,
    id,
    model: body.model,
    jobs,
    promptTokens: prompts.reduce((a, p) => a + p.ids.length, 0),
    promptCount: prompts.length,
    logprobs,
    perToken: body.tokenrouter_tokens === true,
    streamInterval: body.stream_interval ?? limits.streamInterval,
    output,
    checks,
    ...(constraint ? { constraint } : {}),
  };
}

/**
 * What the request sets, else the entry model folder's generation_config.json, else OpenAI's
 * (temperature 1, no cut); do_sample false means greedy (transformers). top_k -1 and 0 and min_p 0 cut nothing.
 */
function samplingFor(body: Pick<ChatRequest, 'temperature' | 'top_p' | 'top_k' | 'min_p'>, d: GenerationDefaults): Omit<SamplingParams, 'seed'> {
  const temperature = body.temperature ?? (d.doSample === false ? 0 : (d.temperature ?? 1));
  const s: Omit<SamplingParams, 'seed'> = { temperature, topP: body.top_p ?? d.topP ?? 1, topK: Math.max(body.top_k ?? d.topK ?? 0, 0) };
  const minP = body.min_p ?? d.minP ?? 0;
  if (minP > 0) s.minP = minP;
  return s;
}

export interface AnswerContext {
  service: TokenRouterService;
  /** The server's metrics (metrics.ts), which count each choice as it ends. */
  metrics: { observeRequest(o: GenerateOutcome, startedPerf: number, unary: boolean): void };
  /** The server's graceful stop, which ends a still-running answer at its deadline. */
  drain?: Drain;
  /** Each choice's completion tokens as it ends (cancelled and failed ones too: they were generated). */
  onCompletionTokens?: (n: number) => void;
}

/** What an answer does with its choices; none is called once the answer is over. */
export interface ChoiceHandlers {
  /** The whole answer at the end (its time to first token is the request's), not streamed. */
  unary: boolean;
  /** A committed token's visible text, its model, and its detail when the request asked for it. */
  token(k: number, text: string, model: string, detail: StreamToken | null): void;
  ended?(k: number, o: GenerateOutcome): void;
  done(outs: GenerateOutcome[]): void;
  /** One choice failed (`e`), was cancelled (null), or the drain's deadline came (`e`): every choice is cancelled. */
  stopped(e: unknown): void;
}

/**
 * Starts every choice (one refused, 429 / 503 / 404, cancels those started and throws) and ends
 * the answer once: when all are done, or at the first that does not finish. Returns a cancel that
 * ends it quietly.
 */
export function runChoices(ctx: AnswerContext, jobs: readonly { params: GenerateParams }[], req: Request, res: Response, on: ChoiceHandlers): () => void {
  const { service, metrics } = ctx;
  const started = performance.now();
  const outs: GenerateOutcome[] = new Array(jobs.length);
  const handles: RequestHandle[] = [];
  let done = 0;
  let over = false;
  const cancel = () => {
    if (over) return false;
    over = true;
    for (const h of handles) h.cancel();
    return true;
  };
  try {
    jobs.forEach(({ params }, k) => {
      const top = params.sampling.topLogprobs;
      const sink: GenerateSink = {
        onToken: (token, model, _i, signals, atHandoff, text) => {
          if (over) return;
          // signals come only when the request asked for detail; decoded per token, uncached: 2-4 µs warm on qwen3-42m's tokenizer, against a 34-49 ms step at c = 8
          on.token(k, text, model, signals ? streamToken(token, service.tokenizer.decode([token]), model, signals, atHandoff, top) : null);
        },
        onEnd: (o) => {
          metrics.observeRequest(o, started, on.unary);
          spentInCluster(res, o.result);
          ctx.onCompletionTokens?.(o.result.tokens.length);
          if (over) return;
          if (o.finishReason === 'cancelled' || o.finishReason === 'error') {
            cancel();
            return on.stopped(o.finishReason === 'error' ? (o.result.error ?? new Error('failed')) : null);
          }
          outs[k] = o;
          on.ended?.(k, o);
          if (++done === outs.length && !over) {
            over = true;
            on.done(outs);
          }
        },
      };
      handles.push(generate(service, params, sink));
    });
  } catch (e) {
    cancel();
    throw e;
  }
  res.on('close', () => {
    if (!res.writableFinished) cancel();
  });
  req.on('aborted', cancel);
  ctx.drain?.track(res, (e) => {
    if (cancel()) on.stopped(e);
  });
  return () => void cancel();
}

export interface GenerateParams {
  model: string;
  promptIds: number[];
  maxTokens: number;
  /** Neither EOS nor a stop string ends the request before this many tokens (vLLM's min_tokens). */
  minTokens?: number;
  sampling: SamplingParams;
  stop: string[];
  /** With model "draft": an IR to compile and run without storing it. */
  draftIr?: unknown;
  /** The id the client sees; the trace, the timeline and the metrics use the same. */
  requestId?: string;
  /** Hand the sink each token's signals and decision (`tokenrouter_tokens`); logprobs imply it. Off: text and model only. */
  perToken?: boolean;
  /** Every model writes the answer under this grammar (structured outputs, required tool calls). */
  constraint?: Constraint;
}

export interface GenerateSink {
  /**
   * Each committed token (SubmitOptions.onToken), called unbound by the cluster itself: nothing of the
   * service runs per token. Text held back while a stop string might still form is in no delta: it
   * is what the result's whole text has past them.
   */
  onToken: TokenListener;
  onEnd(outcome: GenerateOutcome): void;
}

export interface GenerateOutcome {
  result: RequestResult;
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  algorithm: string;
  version: number | null;
}

let seq = 0;

/** Starts one generation; tokens and text stream to `sink`. Throws typed errors before anything starts. */
export function generate(service: TokenRouterService, params: GenerateParams, sink: GenerateSink): RequestHandle {
  const { algorithm, ref, name, version } = service.algorithms.resolve(params.model, params.draftIr);
  // the engines detokenise and match stop strings; their deltas go from the cluster to the sink
  return service.cluster.submit({
    id: params.requestId ?? `cmpl-${Date.now().toString(36)}${(++seq).toString(36)}`,
    prompt: params.promptIds,
    maxTokens: Math.min(params.maxTokens, service.config.limits.maxTokens),
    minTokens: params.minTokens,
    sampling: params.sampling,
    algorithm,
    algorithmRef: ref,
    text: { stop: params.stop },
    detail: params.perToken === true || params.sampling.topLogprobs !== undefined,
    ...(params.constraint ? { constraint: params.constraint } : {}),
    onToken: sink.onToken,
    onEnd: (result) => {
      const { status, finishReason: why } = result;
      const finishReason = status === 'cancelled' ? 'cancelled' : status === 'failed' ? 'error' : why === 'length' ? 'length' : 'stop';
      sink.onEnd({ result, finishReason, algorithm: name, version });
    },
  });
}
