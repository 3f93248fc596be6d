// One OpenAI request, checked and planned: its prompts as ids, the token budget, sampling, and one job per choice.
import crypto from 'node:crypto';
import { MAX_CHOICES, type ChatRequest, type CompletionRequest } from '../../../shared/api/openai.ts';
import { TokenRouterError } from '../../errors.ts';
import { messageText } from '../chatPrompts.ts';
import type { SamplingParams } from '../../runner/modelRunner.ts';
import type { GenerationDefaults } from '../../runner/modelFolder.ts';
import type { GenerateParams } from '../generate.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import { mix } from '../../util/hash.ts';
import type { Constraint } from '../../../shared/protocol/constraint.ts';
import type { OutputSpec } from './answerOutput.ts';
import { constraintOf, requestedGrammar, type FieldGrammar } from './constraintPlan.ts';
import { thoughtAtStart } from './reasoningParser.ts';
import { planTools } from './toolPlan.ts';

export type Kind = 'completion' | 'chat';

/** One choice to generate: `index` as OpenAI numbers them (prompt i, choice j of n: i * n + j). */
export interface Job {
  index: number;
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
  if (echo && logprobs !== undefined) throw refuse('echo', "echo with logprobs would need the prompt tokens' logprobs, which this server does not compute");
  const logitBias: [number, number][] = Object.entries(body.logit_bias ?? {}).map(([k, v]) => [Number(k), v]);
  const outside = logitBias.find(([t]) => t >= vocab);
  if (outside) throw refuse('logit_bias', `logit_bias token id ${outside[0]} is outside the vocabulary (size ${vocab})`);
  const frequency = body.frequency_penalty ?? 0;
  const presence = body.presence_penalty ?? 0;
  const penalised = frequency !== 0 || presence !== 0 || logitBias.length > 0;
  const seed = (body.seed ?? crypto.randomInt(2 ** 31)) >>> 0;
  const stop = (body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop).filter((x) => x.length > 0);
  const stopIds = body.stop_token_ids ?? [];
  const badStop = stopIds.find((t) => t >= vocab);
  if (badStop !== undefined) throw refuse('stop_token_ids', `stop_token_ids holds ${badStop}, outside the vocabulary (size ${vocab})`);
  const base = samplingFor(body, (entryName !== undefined && service.folders.get(entryName)?.generation) || {});
  if (stopIds.length > 0) base.stopTokenIds = [...new Set(stopIds)];
  const id = requestId ?? `${chat ? 'chatcmpl' : 'cmpl'}-${crypto.randomUUID()}`;
  const jobs = prompts.flatMap((p, i) =>
    Array.from({ length: n }, (_, j): Job => {
      // choice 0 keeps the request's seed; choice j > 0 gets one hashed from it, so choices differ and replay
      const sampling: SamplingParams = { ...base, seed: j === 0 ? seed : mix(seed, j) >>> 0 };
      if (logprobs !== undefined) sampling.topLogprobs = logprobs;
      if (penalised) sampling.penalties = { frequency, presence, logitBias, outputFrom: p.ids.length };
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
      return { index: i * n + j, echo: echo ? p.text : '', params };
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
 * (temperature 1, no cut). A folder whose do_sample is false defaults to greedy (transformers'
 * meaning) unless the request sets a temperature. top_k -1 and 0 both mean no cut (vLLM and
 * transformers), as does min_p 0.
 */
function samplingFor(body: Pick<ChatRequest, 'temperature' | 'top_p' | 'top_k' | 'min_p'>, d: GenerationDefaults): Omit<SamplingParams, 'seed'> {
  const temperature = body.temperature ?? (d.doSample === false ? 0 : (d.temperature ?? 1));
  const s: Omit<SamplingParams, 'seed'> = { temperature, topP: body.top_p ?? d.topP ?? 1, topK: Math.max(body.top_k ?? d.topK ?? 0, 0) };
  const minP = body.min_p ?? d.minP ?? 0;
  if (minP > 0) s.minP = minP;
  return s;
}

/**
 * Encoding runs on the event loop every client shares and costs time linear in the text (about 5 µs
 * a character with the bundled tokenizer: a 1 MB prompt stalled all streams for seconds). No
 * tokenizer averages anywhere near 32 characters a token, so longer text cannot fit the context
 * window and is refused before it is encoded.
 */
function refuseTextBeyondWindow(chars: number, maxContext: number, param: string): void {
  if (chars > maxContext * 32) throw refuse(param, `the prompt is ${chars} characters, far more than the context window of ${maxContext} tokens can hold`);
}

/** Every prompt of a completions request as ids (and its text, for echo); each is checked as a single prompt was. */
function completionPrompts(service: TokenRouterService, body: CompletionRequest, maxContext: number, vocab: number): { ids: number[]; text: string }[] {
  const p = body.prompt;
  const list: (string | number[])[] = typeof p === 'string' ? [p] : p.length > 0 && typeof p[0] === 'number' ? [p as number[]] : (p as (string | number[])[]);
  return list.map((x, i) => {
    const param = list.length > 1 ? `prompt.${i}` : 'prompt';
    if (typeof x === 'string') {
      if (x.length === 0) throw refuse(param, 'prompt is empty');
      refuseTextBeyondWindow(x.length, maxContext, param);
      return { ids: service.tokenizer.encode(x, true), text: x };
    }
    const bad = x.find((t) => t >= vocab);
    if (bad !== undefined) throw refuse(param, `prompt token id ${bad} is outside the vocabulary (size ${vocab})`);
    return { ids: x, text: body.echo ? service.tokenizer.decode(x) : '' };
  });
}
