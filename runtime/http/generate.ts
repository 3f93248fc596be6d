// One generation on the cluster: what it takes and hands back, starting it (generate), and an answer's choices run together (runChoices).
import type { Request, Response } from 'express';
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { RequestResult, TokenListener } from '../entry/requestState.ts';
import { TokenRouterError } from '../errors.ts';
import { spentInCluster } from '../eval/entryProfile.ts';
import type { SamplingParams } from '../runner/modelRunner.ts';
import type { Drain } from './drain.ts';
import { streamToken, type StreamToken } from './streamToken.ts';
import type { TokenRouterService } from './tokenRouterService.ts';

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

/** Whether a generation's sink gets each token's signals: per-token detail (`tokenrouter_tokens`) or logprobs asked for. */
export function wantsDetail(params: Pick<GenerateParams, 'perToken' | 'sampling'>): boolean {
  return params.perToken === true || params.sampling.topLogprobs !== undefined;
}

export interface GenerateSink {
  /**
   * Each committed token, called by the cluster itself (nothing of the service runs per token; called
   * unbound): its id, the model that wrote it, its output index, its signals when the request asked
   * for per-token detail (`wantsDetail`; `streamToken` shapes them), whether it was committed at a
   * handoff, and the text it lets the client see. Text held back while a stop string might still
   * form is not in any delta: it is what `onEnd`'s whole text has past them.
   */
  onToken: TokenListener;
  onEnd(outcome: GenerateOutcome): void;
}

export interface GenerateOutcome {
  result: RequestResult;
  text: string;
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  algorithm: string;
  version: number | null;
}

export interface GenerateHandle {
  id: string;
  cancel(): void;
}

let seq = 0;

/** Starts one generation; tokens and text stream to `sink`. Throws typed errors before anything starts. */
export function generate(service: TokenRouterService, params: GenerateParams, sink: GenerateSink): GenerateHandle {
  const { algorithm, ref, name, version } = service.algorithms.resolve(params.model, params.draftIr);
  for (const m of algorithm.models) {
    if (service.cluster.engine(m)?.down) throw new TokenRouterError('model_unavailable', `model ${m} is down; retry shortly`, 'model', { retry_after_s: 1 });
  }
  // the engines detokenise and match stop strings; their deltas go from the cluster to the sink
  const handle = service.cluster.submit({
    id: params.requestId ?? `cmpl-${Date.now().toString(36)}${(++seq).toString(36)}`,
    prompt: params.promptIds,
    maxTokens: Math.min(params.maxTokens, service.config.limits.maxTokens),
    minTokens: params.minTokens,
    sampling: params.sampling,
    algorithm,
    algorithmRef: ref,
    text: { stop: params.stop },
    detail: wantsDetail(params),
    ...(params.constraint ? { constraint: params.constraint } : {}),
    onToken: sink.onToken,
    onEnd: (result) => {
      const { status, finishReason: why } = result;
      const finishReason = status === 'cancelled' ? 'cancelled' : status === 'failed' ? 'error' : why === 'length' ? 'length' : 'stop';
      sink.onEnd({ result, text: result.text, finishReason, algorithm: name, version });
    },
  });
  return { id: handle.id, cancel: handle.cancel };
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
    jobs.forEach(({ params }, k) => {
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
