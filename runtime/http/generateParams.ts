// What one generation takes and hands back: the request's parameters, the sink its tokens stream to, its outcome.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { RequestResult, TokenListener } from '../entry/requestState.ts';
import type { SamplingParams } from '../runner/modelRunner.ts';

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
