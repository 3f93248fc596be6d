// A plan's choices run together (all started or none, all ended as one) and the OpenAI fields both answers build from them.
import type { Request, Response } from 'express';
import type { ChatTokenLogprob, CompletionLogprobs, RequestAttribution } from '../../../shared/api/openai.ts';
import { spentInCluster } from '../../eval/entryProfile.ts';
import type { Drain } from '../drain.ts';
import { wantsDetail, type GenerateHandle, type GenerateOutcome, type GenerateSink } from '../generateParams.ts';
import type { ServerMetrics } from '../metrics.ts';
import { streamToken, type StreamToken } from '../streamToken.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import type { Kind, Plan } from './requestPlan.ts';

export interface AnswerContext {
  service: TokenRouterService;
  metrics: ServerMetrics;
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
export function runChoices(ctx: AnswerContext, plan: Plan, req: Request, res: Response, on: ChoiceHandlers): () => void {
  const { service, metrics } = ctx;
  const started = performance.now();
  const outs: GenerateOutcome[] = new Array(plan.jobs.length);
  const handles: GenerateHandle[] = [];
  let done = 0;
  let over = false;
  const cancel = () => {
    if (over) return false;
    over = true;
    for (const h of handles) h.cancel();
    return true;
  };
  try {
    plan.jobs.forEach(({ params }, k) => {
      const detail = wantsDetail(params);
      const top = params.sampling.topLogprobs;
      const sink: GenerateSink = {
        onToken: (token, model, _i, signals, atHandoff, text) => {
          if (over) return;
          // decoded per token, uncached: 2-4 µs warm on qwen3-42m's tokenizer, against a 34-49 ms step at c = 8
          on.token(k, text, model, detail ? streamToken(token, service.tokenizer.decode([token]), model, signals!, atHandoff, top) : null);
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
      handles.push(service.generate(params, sink));
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

/** OpenAI reports log(0) as -9999 (JSON has no -Infinity). */
const logOf = (p: number) => (p > 0 ? Math.max(Math.log(p), -9999) : -9999);
const bytesOf = (s: string) => Array.from(Buffer.from(s, 'utf8'));

/**
 * The tokens' logprobs in the answer's shape: chat's per-token entries, or the legacy parallel
 * arrays (`at.offset` carries the text offset across a stream's chunks; the sampled token is always
 * in its top_logprobs, as OpenAI documents).
 */
export function logprobsOf(
  service: TokenRouterService,
  kind: Kind,
  ts: readonly StreamToken[],
  at: { offset: number },
): { content: ChatTokenLogprob[] } | CompletionLogprobs {
  const decode = (id: number) => service.tokenizer.decode([id]);
  if (kind === 'chat') {
    const content = ts.map(({ text, model, logprobs: lp }) => ({
      token: text,
      logprob: logOf(lp!.prob),
      bytes: bytesOf(text),
      top_logprobs: lp!.topIds.map((id, i) => {
        const s = decode(id);
        return { token: s, logprob: logOf(lp!.topProbs[i]), bytes: bytesOf(s) };
      }),
      tokenrouter_model: model,
    }));
    return { content };
  }
  return {
    tokens: ts.map((t) => t.text),
    token_logprobs: ts.map((t) => logOf(t.logprobs!.prob)),
    top_logprobs: ts.map(({ id, text, logprobs: lp }) => {
      const entries: [string, number][] = lp!.topIds.map((tid, i) => [decode(tid), logOf(lp!.topProbs[i])]);
      if (!lp!.topIds.includes(id)) entries.push([text, logOf(lp!.prob)]);
      return Object.fromEntries(entries);
    }),
    text_offset: ts.map((t) => {
      at.offset += t.text.length;
      return at.offset - t.text.length;
    }),
    tokenrouter_models: ts.map((t) => t.model),
  };
}

/** The tokenrouter extension's token list, without the logprobs OpenAI's own fields already carry. */
export const plainTokens = (ts: readonly StreamToken[]) => ts.map(({ logprobs: _lp, ...t }) => t);

/**
 * OpenAI's usage: each distinct prompt counted once however many choices it has (in order); its
 * cached tokens are the most any of its choices found in the prefix cache.
 */
export function usageOf(plan: Plan, outs: readonly GenerateOutcome[]) {
  const perPrompt = plan.jobs.length / plan.promptCount;
  const completion = outs.reduce((a, o) => a + o.result.tokens.length, 0);
  let cached = 0;
  for (let i = 0; i < outs.length; i += perPrompt) cached += Math.max(...outs.slice(i, i + perPrompt).map((o) => o.result.cachedPromptTokens));
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

/** The finish reason OpenAI gives: "tool_calls" when the answer ended by itself with calls in it. */
export const finishReasonOf = (reason: string, calls: number) => (calls > 0 && reason === 'stop' ? 'tool_calls' : reason);

/** The `tokenrouter` field: one choice's, or several summed (each choice carries its own too). */
export function attribution(...outs: GenerateOutcome[]): RequestAttribution {
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
