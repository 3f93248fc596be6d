// One request at the entry: its lifecycle actor, what its client was streamed, and its result.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import { createActor, setup, type Actor } from 'xstate';
import type { Algorithm, Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import { modelRuns, type RequestStatus, type TraceEvent } from '../../shared/trace.ts';
import { GREEDY, type SamplingParams } from '../runner/modelRunner.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import { newCounters, newTextState, type RequestCounters, type RequestSpec } from '../core/localRequest.ts';
import type { Arrival, Commit, Finish, FinishReason } from '../../shared/protocol/engineProtocol.ts';
import { maskedFrom } from '../grammar/constraintState.ts';

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
  /** Prompt tokens the prefix cache held when the prompt was first fed. */
  cachedPromptTokens: number;
  /** Output index from which a grammar masked every token (absent: no constraint, or its start never came). */
  maskedFrom?: number;
  /** The output text as the engines detokenised it, up to a stop string ('' unless the request asked for text). */
  text: string;
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
  /** The same algorithm by reference: needed when a model it uses runs in an engine thread. */
  algorithmRef?: AlgorithmRef;
  sampling?: Partial<SamplingParams>;
  /** The engines detokenise the output (they need a tokenizer beside them) and end it at the first stop string. */
  text?: { readonly stop: readonly string[] };
  /** onToken gets each token's signals (else undefined). */
  detail?: boolean;
  /** Every engine masks its draws with this grammar (shared/protocol/constraint.ts). */
  constraint?: Constraint;
  onToken?: TokenListener;
  onEnd?: (result: RequestResult) => void;
}

/**
 * Hears each committed output token, in order: its model, its index, the signals route() saw for it (when
 * `detail`), whether it was kept by `send` at a handoff, and the text it lets the client see now (when `text`).
 */
export type TokenListener = (token: number, model: string, index: number, signals: TokenSignals | undefined, atHandoff: boolean, text: string) => void;

export type RequestEvent = { type: 'FIRST_TOKEN' } | { type: 'FINISH' } | { type: 'FAIL' } | { type: 'CANCEL' };

/** Each request at the entry is an actor of this chart; its status is the snapshot's value. */
export const requestMachine = setup({ types: { events: {} as RequestEvent } }).createMachine({
  id: 'request',
  initial: 'admitted',
  states: {
    admitted: { on: { FIRST_TOKEN: 'streaming', FINISH: 'done', FAIL: 'failed', CANCEL: 'cancelled' } },
    streaming: { on: { FINISH: 'done', FAIL: 'failed', CANCEL: 'cancelled' } },
    done: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

type EndStatus = RequestResult['status'];
/** How a request ends: an engine's finish, or the entry's own (a cancel, a listener that threw, a lost engine). */
export type Ending = Pick<Finish, 'reason' | 'error' | 'text' | 'counters'> & { readonly status: EndStatus };
const EVENT = { done: { type: 'FINISH' }, failed: { type: 'FAIL' }, cancelled: { type: 'CANCEL' } } as const;

export class RequestState {
  /** The lifecycle; status is read from it, never kept beside it. */
  readonly actor: Actor<typeof requestMachine> = createActor(requestMachine).start();
  readonly done: Promise<RequestResult>;
  private resolve!: (r: RequestResult) => void;
  /** What the client was streamed, in output order, written only by `append`; kept for results of requests the entry ends, and remote recompute. */
  readonly output: number[] = [];
  readonly producedBy: ModelId[] = [];
  private text = '';
  firstTokenAt: number | null = null;
  /** Commits and a finish that overtook earlier commits (engine threads report on separate ports). */
  readonly early = new Map<number, Commit>();
  lateFinish: Finish | null = null;
  /** The model whose engine decodes it after `hops` handoffs, from `moved` events and the entry's own placements; the highest hop wins. */
  whereabouts: { readonly model: string; readonly hops: number } = { model: '', hops: -1 };

  constructor(
    readonly spec: RequestSpec,
    readonly opts: SubmitOptions,
    readonly submittedAt: number,
  ) {
    this.done = new Promise((r) => (this.resolve = r));
  }

  get id(): string {
    return this.spec.id;
  }

  /** Its first arrival, at the algorithm's entry model: the prompt as a handoff from the entry (model 0). */
  firstArrival(): Arrival {
    const { spec } = this;
    const handoff: Handoff<unknown> = {
      type: 'handoff',
      requestId: spec.id,
      from: 0,
      to: spec.algorithm.entry,
      anchor: 0,
      tokens: this.opts.prompt,
      keep: true,
      done: false,
      meta: spec.algorithm.initMeta(),
    };
    return { spec, handoff, known: new Array(spec.models.length + 1).fill(0), counters: newCounters(spec.models.length), text: spec.text && newTextState() };
  }

  append(c: Commit): void {
    this.output.push(c.token);
    this.producedBy.push(c.model);
    this.text += c.text;
  }

  /** In a final state: done, failed or cancelled. */
  get finished(): boolean {
    return this.actor.getSnapshot().status === 'done';
  }

  end(status: EndStatus): void {
    this.actor.send(EVENT[status]);
  }

  /** `counters`: the tallies of the engine that owned the request last (else the ending's). */
  result({ reason, error, text = '' }: Ending, counters: RequestCounters | undefined, endedAt: number): RequestResult {
    const names = this.spec.models;
    const c = counters ?? newCounters(names.length);
    const byModel = (counts: readonly number[]) => Object.fromEntries(names.map((n, i) => [n, counts[i + 1]]));
    const perToken = new Array(names.length + 1).fill(0);
    for (const m of this.producedBy) perToken[m]++;
    return {
      id: this.id,
      status: this.actor.getSnapshot().value as EndStatus,
      finishReason: reason,
      tokens: this.output.slice(),
      producedBy: this.producedBy.map((m) => names[m - 1]),
      tokensByModel: byModel(perToken),
      // tallies ride on finishes: a request ended here while across a port has only its handoffs, from the moves
      handoffs: Math.max(c.handoffs, this.whereabouts.hops),
      discarded: c.discarded,
      admissions: byModel(c.admissions),
      tokensFed: byModel(c.tokensFed),
      cachedPromptTokens: c.cachedPrompt,
      // what the engine held back until the end comes with the ending
      text: this.text + text,
      maskedFrom: this.spec.constraint && maskedFrom(this.spec.constraint, this.output),
      submittedAt: this.submittedAt,
      firstTokenAt: this.firstTokenAt,
      endedAt,
      error,
    };
  }

  /** The caller hears the result (`onEnd`, then the handle's promise). */
  answer(result: RequestResult): void {
    try {
      this.opts.onEnd?.(result);
    } finally {
      this.resolve(result);
    }
  }
}

/** The fixed facts of a request, for every engine it visits. */
export function requestSpec(id: string, serial: number, opts: SubmitOptions, maxContext: number): RequestSpec {
  const { algorithm, prompt, maxTokens } = opts;
  const sampling = { ...GREEDY, ...opts.sampling };
  return {
    ...(opts.constraint ? { constraint: opts.constraint } : {}),
    ...(opts.text ? { text: opts.text } : {}),
    ...(opts.detail ? { detail: true } : {}),
    id,
    serial,
    algorithm,
    ...(opts.algorithmRef ? { ref: opts.algorithmRef } : {}),
    models: algorithm.models,
    promptLength: prompt.length,
    maxLength: Math.min(prompt.length + maxTokens, maxContext),
    minTokens: Math.max(0, Math.min(opts.minTokens ?? 0, maxTokens)),
    sampling,
    drawSeed: sampling.seed >>> 0,
  };
}

/** The trace event of a request that ended: its output as runs of one model each. */
export function requestEndEvent(result: RequestResult): TraceEvent {
  return {
    type: 'request-end',
    t: result.endedAt,
    requestId: result.id,
    status: result.status,
    tokens: result.tokens,
    runs: modelRuns(result.producedBy),
    handoffs: result.handoffs,
    admittedAt: result.submittedAt,
    firstTokenAt: result.firstTokenAt,
    ...(result.maskedFrom !== undefined ? { maskedFrom: result.maskedFrom } : {}),
  };
}
