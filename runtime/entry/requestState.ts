// One request at the entry: its lifecycle actor, the committed output it streams, and its result.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import { createActor, type Actor } from 'xstate';
import type { Algorithm, Handoff, ModelId, TokenSignals } from '../../shared/algorithm.ts';
import type { RequestStatus, TraceEvent } from '../../shared/trace.ts';
import { requestMachine } from './requestMachine.ts';
import type { SamplingParams } from '../runner/modelRunner.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import { newCounters, type RequestCounters, type RequestSpec } from '../core/localRequest.ts';
import type { Arrival, Commit, Finish, FinishReason } from '../core/messages.ts';
import { newTextState } from '../core/outputProcessor.ts';

export type { FinishReason } from '../core/messages.ts';

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
  /**
   * Called for each committed output token, in order, with the signals route() saw for it (when
   * `detail`), whether it was committed at a hand-off (kept by `send`) rather than by staying, and the
   * text it lets the client see now (when `text`).
   */
  onToken?: TokenListener;
  onEnd?: (result: RequestResult) => void;
}

/** What hears each committed token of a request (SubmitOptions.onToken). */
export type TokenListener = (token: number, model: string, index: number, signals: TokenSignals | undefined, atHandoff: boolean, text: string) => void;

/** The model whose engine decodes a request, reached after `hops` handoffs. */
export type Whereabouts = { readonly model: string; readonly hops: number };

const NOWHERE: Whereabouts = { model: '', hops: -1 };

export class RequestState {
  /** The lifecycle; status is read from it, never kept beside it. */
  readonly actor: Actor<typeof requestMachine> = createActor(requestMachine);
  /** What the entry streamed (prompt excluded), by model: written only by `append`, from commit events; the sequence is the engine's. */
  readonly output: readonly number[] = [];
  readonly producedBy: readonly ModelId[] = [];
  firstTokenAt: number | null = null;
  endedAt = 0;
  finishReason: FinishReason | null = null;
  error: Error | undefined;
  /** Commits that arrived before one they follow (engine threads report on separate ports), by output index. */
  readonly early = new Map<number, Commit>();
  /** A finish that arrived before the commits it follows. */
  lateFinish: Finish | null = null;
  /** Where it decodes, written only by `moveTo` from `moved` events and the entry's own placements. */
  whereabouts: Whereabouts = NOWHERE;
  /** Tallies from the engine that owned the request when it ended. */
  counters: RequestCounters;
  /** The text the engines sent, in output order. */
  text = '';

  constructor(
    readonly spec: RequestSpec,
    /** Sent to the entry model when the request starts (it may wait at the entry first). */
    readonly prompt: readonly number[],
    readonly submittedAt: number,
    readonly onToken: SubmitOptions['onToken'],
    readonly onEnd: SubmitOptions['onEnd'],
    readonly resolve: (r: RequestResult) => void,
  ) {
    this.actor.start();
    this.counters = newCounters(spec.models.length);
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
      tokens: this.prompt,
      keep: true,
      done: false,
      meta: spec.algorithm.initMeta(),
    };
    return { spec, handoff, known: new Array(spec.models.length + 1).fill(0), counters: newCounters(spec.models.length), text: spec.text && newTextState() };
  }

  /**
   * The commits to apply now, in output order: `c` and those that waited for it; none while `c` is
   * early (engines in other threads report on their own ports, so commits may arrive out of order).
   */
  *inOrder(c: Commit): Generator<Commit> {
    if (c.index !== this.output.length) {
      if (c.index > this.output.length) this.early.set(c.index, c);
      return;
    }
    yield c;
    for (let next = this.early.get(this.output.length); next; next = this.early.get(this.output.length)) {
      this.early.delete(next.index);
      yield next;
    }
  }

  /** A finish that overtook commits it follows waits for them (true: it was kept for later). */
  waitsFor(f: Finish): boolean {
    if (f.committed === undefined || this.output.length >= f.committed) return false;
    this.lateFinish = f;
    return true;
  }

  /** The finish that waited, once every commit before it was applied. */
  dueFinish(): Finish | null {
    const f = this.lateFinish;
    return f && !this.finished && this.output.length >= (f.committed ?? 0) ? f : null;
  }

  /** A `moved` event: the latest handoff wins, so a report that comes late changes nothing (false: it was stale). */
  moveTo(model: string, hops: number): boolean {
    if (this.finished || hops <= this.whereabouts.hops) return false;
    this.whereabouts = { model, hops };
    return true;
  }

  /** A commit event, in its turn (see `inOrder`): the stream grows by its token and text. */
  append(c: Commit): void {
    (this.output as number[]).push(c.token);
    (this.producedBy as ModelId[]).push(c.model);
    if (c.text) this.text += c.text;
  }

  get status(): RequestStatus {
    return this.actor.getSnapshot().value;
  }

  /** In a final state: done, failed or cancelled. */
  get finished(): boolean {
    return this.actor.getSnapshot().status === 'done';
  }

  result(): RequestResult {
    const names = this.spec.models;
    const byModel = (counts: readonly number[]) => Object.fromEntries(names.map((n, i) => [n, counts[i + 1]]));
    const perToken = new Array(names.length + 1).fill(0);
    for (const m of this.producedBy) perToken[m]++;
    const c = this.counters;
    return {
      id: this.id,
      status: this.status as RequestResult['status'],
      finishReason: this.finishReason ?? 'error',
      tokens: this.output.slice(),
      producedBy: this.producedBy.map((m) => names[m - 1]),
      tokensByModel: byModel(perToken),
      handoffs: c.handoffs,
      discarded: c.discarded,
      admissions: byModel(c.admissions),
      tokensFed: byModel(c.tokensFed),
      cachedPromptTokens: c.cachedPrompt,
      text: this.text,
      ...maskedFrom(this.spec, this.output),
      submittedAt: this.submittedAt,
      firstTokenAt: this.firstTokenAt,
      endedAt: this.endedAt,
      error: this.error,
    };
  }
}

/** Where the grammar took over the output: at once, or after the first `startAfter` id. */
function maskedFrom(spec: RequestSpec, output: readonly number[]): { maskedFrom?: number } {
  const c = spec.constraint;
  if (!c) return {};
  if (!c.startAfter || c.startAfter.length === 0) return { maskedFrom: 0 };
  const at = output.findIndex((t) => c.startAfter!.includes(t));
  return at < 0 ? {} : { maskedFrom: at + 1 };
}

/** The fixed facts of a request, for every engine it visits. */
export function requestSpec(
  id: string,
  serial: number,
  algorithm: Algorithm<unknown>,
  ref: AlgorithmRef | undefined,
  prompt: readonly number[],
  maxTokens: number,
  minTokens: number,
  sampling: SamplingParams,
  maxContext: number,
  out: Pick<SubmitOptions, 'text' | 'detail' | 'constraint'> = {},
): RequestSpec {
  return {
    ...(out.constraint ? { constraint: out.constraint } : {}),
    ...(out.text ? { text: out.text } : {}),
    ...(out.detail ? { detail: true } : {}),
    id,
    serial,
    algorithm,
    ...(ref ? { ref } : {}),
    models: algorithm.models,
    promptLength: prompt.length,
    maxLength: Math.min(prompt.length + maxTokens, maxContext),
    minTokens,
    sampling,
    samplingBelowMin: Object.freeze({ ...sampling, suppressEos: true }),
    drawSeed: sampling.seed >>> 0,
  };
}

/** The trace event of a request that ended: its output as runs of one model each. */
export function requestEndEvent(result: RequestResult): TraceEvent {
  const runs: { model: string; count: number }[] = [];
  for (const name of result.producedBy) {
    const last = runs[runs.length - 1];
    if (last && last.model === name) last.count++;
    else runs.push({ model: name, count: 1 });
  }
  return {
    type: 'request-end',
    t: result.endedAt,
    requestId: result.id,
    status: result.status,
    tokens: result.tokens,
    runs,
    handoffs: result.handoffs,
    admittedAt: result.submittedAt,
    firstTokenAt: result.firstTokenAt,
    ...(result.maskedFrom !== undefined ? { maskedFrom: result.maskedFrom } : {}),
  };
}
