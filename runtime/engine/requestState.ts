// One request's routing state, shared by the sub-servers it visits: committed tokens, who knows what, metadata.
import type { Actor } from 'xstate';
import type { Algorithm, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { RequestStatus } from '../../shared/trace.ts';
import type { requestMachine } from '../actors/requestMachine.ts';
import type { SamplingParams } from '../runner/modelRunner.ts';
import type { LocalRequest } from './localRequest.ts';
import type { SubServer } from './subServer.ts';

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

export interface RequestResult {
  id: string;
  status: Extract<RequestStatus, 'done' | 'failed' | 'cancelled'>;
  finishReason: FinishReason;
  /** Committed output tokens (prompt excluded). */
  tokens: number[];
  /** Model name that produced each output token. */
  producedBy: string[];
  tokensByModel: Record<string, number>;
  handoffs: number;
  /** Tokens sampled then discarded at a switch: generated, never committed. */
  discarded: number;
  /** Per model: how many times this request was admitted there (retain mode: once per model visited). */
  admissions: Record<string, number>;
  /** Per model: tokens fed to it for this request (prefill + extend + decode). */
  tokensFed: Record<string, number>;
  submittedAt: number;
  firstTokenAt: number | null;
  endedAt: number;
  error?: Error;
}

export interface SubmitOptions<M = unknown> {
  id?: string;
  prompt: readonly number[];
  maxTokens: number;
  /** The models' EOS is left out of every draw until this many tokens are committed (vLLM's min_tokens). */
  minTokens?: number;
  algorithm: Algorithm<M>;
  sampling?: Partial<SamplingParams>;
  /**
   * Called for each committed output token, in order, with the signals route() saw for it and
   * whether it was committed at a hand-off (kept by `send`) rather than by staying.
   */
  onToken?: (token: number, model: string, index: number, signals: TokenSignals, atHandoff: boolean) => void;
  onEnd?: (result: RequestResult) => void;
}

export class RequestState {
  readonly tokens: number[];
  readonly producedBy: number[] = [];
  /** known[m]: length of the committed sequence model m has in its local view (0 = never visited). */
  readonly known: number[];
  readonly locals: (LocalRequest | undefined)[];
  readonly admissions: number[];
  readonly tokensFed: number[];
  meta: unknown;
  owner: ModelId;
  handoffs = 0;
  discarded = 0;
  firstTokenAt: number | null = null;
  endedAt = 0;
  status: RequestStatus = 'admitted';
  finishReason: FinishReason | null = null;
  error: Error | undefined;
  actor: Actor<typeof requestMachine> | null = null;
  /** Sequence length at which decoding must stop: prompt + max tokens, capped by the smallest context. */
  readonly maxLength: number;
  readonly drawSeed: number;
  /** `sampling` with EOS left out of the draw, used while fewer than `minTokens` are committed. */
  readonly samplingBelowMin: SamplingParams;

  constructor(
    readonly id: string,
    readonly algorithm: Algorithm<unknown>,
    readonly lanes: readonly SubServer[],
    prompt: readonly number[],
    readonly maxTokens: number,
    readonly minTokens: number,
    readonly sampling: SamplingParams,
    readonly submittedAt: number,
    readonly onToken: SubmitOptions['onToken'],
    readonly onEnd: SubmitOptions['onEnd'],
    readonly resolve: (r: RequestResult) => void,
  ) {
    this.tokens = prompt.slice();
    const k = lanes.length + 1;
    this.known = new Array(k).fill(0);
    this.locals = new Array(k).fill(undefined);
    this.admissions = new Array(k).fill(0);
    this.tokensFed = new Array(k).fill(0);
    this.meta = algorithm.initMeta();
    this.owner = algorithm.entry;
    const maxContext = Math.min(...lanes.map((l) => l.runner.info.maxContext));
    this.maxLength = Math.min(prompt.length + maxTokens, maxContext);
    this.drawSeed = sampling.seed >>> 0;
    this.samplingBelowMin = Object.freeze({ ...sampling, suppressEos: true });
  }

  /** Sampling for this request's next step. */
  get stepSampling(): SamplingParams {
    return this.producedBy.length < this.minTokens ? this.samplingBelowMin : this.sampling;
  }

  get promptLength(): number {
    return this.tokens.length - this.producedBy.length;
  }

  get generated(): number {
    return this.producedBy.length;
  }

  get finished(): boolean {
    return this.status === 'done' || this.status === 'failed' || this.status === 'cancelled';
  }

  lane(model: ModelId): SubServer {
    return this.lanes[model - 1];
  }

  result(): RequestResult {
    const names = this.lanes.map((l) => l.name);
    const byModel = (counts: number[]) => Object.fromEntries(names.map((n, i) => [n, counts[i + 1]]));
    const perToken = new Array(this.lanes.length + 1).fill(0);
    for (const m of this.producedBy) perToken[m]++;
    return {
      id: this.id,
      status: this.status as RequestResult['status'],
      finishReason: this.finishReason ?? 'error',
      tokens: this.tokens.slice(this.promptLength),
      producedBy: this.producedBy.map((m) => names[m - 1]),
      tokensByModel: byModel(perToken),
      handoffs: this.handoffs,
      discarded: this.discarded,
      admissions: byModel(this.admissions),
      tokensFed: byModel(this.tokensFed),
      submittedAt: this.submittedAt,
      firstTokenAt: this.firstTokenAt,
      endedAt: this.endedAt,
      error: this.error,
    };
  }
}
