// The OpenAI response fields built from generated tokens: logprobs in both shapes, usage, and the tokenrouter extension.
import type { ChatTokenLogprob, CompletionLogprobs, RequestAttribution } from '../../../shared/api/openai.ts';
import type { GenerateOutcome } from '../generateParams.ts';
import type { StreamToken } from '../streamToken.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import type { ParsedCall } from './toolCallParser.ts';

/** OpenAI reports log(0) as -9999 (JSON has no -Infinity). */
function logOf(p: number): number {
  return p > 0 ? Math.max(Math.log(p), -9999) : -9999;
}

function bytesOf(s: string): number[] {
  return Array.from(Buffer.from(s, 'utf8'));
}

export function chatLogprob(service: TokenRouterService, t: StreamToken): ChatTokenLogprob {
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
export function completionLogprobs(service: TokenRouterService, ts: readonly StreamToken[], at: { offset: number }): CompletionLogprobs {
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
export function plainTokens(ts: readonly StreamToken[]): Omit<StreamToken, 'logprobs'>[] {
  return ts.map(({ logprobs: _lp, ...t }) => t);
}

/**
 * OpenAI's usage: each distinct prompt counted once however many choices it has (`perPrompt` of
 * them, in order); its cached tokens are the most any of its choices found in the prefix cache.
 */
export function usageOf(promptTokens: number, outs: readonly GenerateOutcome[], perPrompt = 1) {
  const completion = outs.reduce((a, o) => a + o.result.tokens.length, 0);
  let cached = 0;
  for (let i = 0; i < outs.length; i += perPrompt) cached += Math.max(...outs.slice(i, i + perPrompt).map((o) => o.result.cachedPromptTokens));
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

/** A parsed call as OpenAI's message.tool_calls entry. */
export function toolCallOf(c: ParsedCall) {
  return { id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } };
}

/** The finish reason OpenAI gives: "tool_calls" when the answer ended by itself with calls in it. */
export function finishReasonOf(reason: string, calls: number): string {
  return calls > 0 && reason === 'stop' ? 'tool_calls' : reason;
}

export function attribution(o: GenerateOutcome): RequestAttribution {
  return {
    algorithm: o.algorithm,
    version: o.version,
    tokens_by_model: o.result.tokensByModel,
    handoffs: o.result.handoffs,
    discarded_tokens: o.result.discarded,
  };
}

/** Several choices: their attributions summed (each choice carries its own too). */
export function sumAttribution(outs: readonly GenerateOutcome[]): RequestAttribution {
  const byModel: Record<string, number> = {};
  for (const o of outs) for (const [m, c] of Object.entries(o.result.tokensByModel)) byModel[m] = (byModel[m] ?? 0) + c;
  return {
    algorithm: outs[0].algorithm,
    version: outs[0].version,
    tokens_by_model: byModel,
    handoffs: outs.reduce((a, o) => a + o.result.handoffs, 0),
    discarded_tokens: outs.reduce((a, o) => a + o.result.discarded, 0),
  };
}
