// A request as one engine holds it: its lifecycle actor and chart, cache handle, the routing state that travels with handoffs; the pure routing of a row; its output processor.
import { createActor, setup } from 'xstate';
import {
  routeInput,
  standardReceive,
  standardSend,
  wantsFor,
  type Algorithm,
  type Handoff,
  type ModelId,
  type SendRequest,
  type StepWants,
  type TokenSignals,
} from '../../shared/algorithm.ts';
import { draw3 } from '../util/hash.ts';
import { detokFlush, detokPush, memoDecoder, newDetokState, type Decoder } from '../runner/detokenizer.ts';
import type { LocalStatus } from '../../shared/trace.ts';
import type { RequestCounters, RequestSpec, TextState } from '../../shared/protocol/engineProtocol.ts';
import type { ConstraintState } from '../grammar/constraintState.ts';

export type { RequestCounters, RequestSpec } from '../../shared/protocol/engineProtocol.ts';

export function newCounters(models: number): RequestCounters {
  return { handoffs: 0, discarded: 0, admissions: new Array(models + 1).fill(0), tokensFed: new Array(models + 1).fill(0), cachedPrompt: 0 };
}

/** A cache of the engine's KV pool: the runner's id for it, the tokens in it, the room reserved for its request's whole context. */
export interface KvCache {
  readonly id: number;
  /** Tokens in the runner's cache (a step feeds the request's tokens from here); only the engine's queues write it. */
  fed: number;
  readonly reserved: number;
}

/** A cache granted; left for a peer, the cache kept; back with it, or after its eviction (recompute); the ends. */
export const LOCAL_EVENTS = ['ADMIT', 'HANDOFF', 'RETURN', 'REQUEUE', 'FINISH', 'CANCEL', 'FAIL'] as const;
export type LocalEvent = { type: (typeof LOCAL_EVENTS)[number] };

const ends = { FINISH: 'done', CANCEL: 'cancelled', FAIL: 'failed' } as const;

/** The source of truth for where a request is on an engine; each local request is an actor of it. */
export const localRequestMachine = setup({ types: { events: {} as LocalEvent } }).createMachine({
  id: 'localRequest',
  initial: 'queued',
  states: {
    queued: { on: { ADMIT: 'running', ...ends } },
    running: { on: { HANDOFF: 'pending-return', ...ends } },
    'pending-return': { on: { RETURN: 'running', REQUEUE: 'queued', ...ends } },
    done: { type: 'final' },
    cancelled: { type: 'final' },
    failed: { type: 'final' },
  },
});

export class LifecycleError extends Error {
  constructor(
    readonly from: LocalStatus,
    readonly event: LocalEvent['type'],
  ) {
    super(`local request: no transition for ${event} in state ${from}`);
  }
}

/** A LocalRequest is itself the view routeRow reads (no per-row copy on the hot path). */
export class LocalRequest {
  /** Its lifecycle on this engine: the status is the snapshot's value, never kept beside it. */
  readonly actor = createActor(localRequestMachine).start();
  /** Its cache, the KV pool's (null while none is held: queued, or evicted while pending-return). */
  cache: KvCache | null = null;
  /** Tokens its cache started with from the prefix cache, until the batch of its first step counts them. */
  cachedPrefix = 0;
  stepsHere = 0;
  /** When it last left for a peer (EngineQueues numbers handoffs): pending-return caches are evicted oldest first. */
  leftAt = 0;
  readonly wants: StepWants;
  /** Its text, while this engine decodes it and its output is detokenised (it travels with every handoff). */
  text: TextState | undefined = undefined;
  /** Its grammar's state here (spec.constraint), derived from `tokens`: nothing of it travels. */
  grammar: ConstraintState | undefined = undefined;
  /** Why its grammar refused the sequence (a token drawn outside the mask): the request fails at its next result. */
  grammarError: Error | undefined = undefined;

  constructor(
    readonly spec: RequestSpec,
    readonly model: ModelId,
    /** The committed sequence as this engine knows it (whole while it owns the request). */
    readonly tokens: number[],
    /** known[m]: how much of the sequence model m has seen. */
    public known: number[],
    public meta: unknown,
    public counters: RequestCounters,
  ) {
    const wants = wantsFor(spec.algorithm, model);
    // per-token detail reports the signals even when route() does not read them
    this.wants = spec.detail && wants.signals === false ? { topK: wants.topK, hidden: wants.hidden, heads: wants.heads } : wants;
  }

  get id(): string {
    return this.spec.id;
  }
  get status(): LocalStatus {
    return this.actor.getSnapshot().value;
  }

  /** Ended (done, cancelled or failed: a final state) while, perhaps, a step still holds its cache. */
  get ended(): boolean {
    return this.actor.getSnapshot().status === 'done';
  }

  /** Decoding here: queued for a cache or running. */
  get owned(): boolean {
    const s = this.status;
    return s === 'running' || s === 'queued';
  }

  get generated(): number {
    return this.tokens.length - this.spec.promptLength;
  }

  /** Moves the lifecycle; throws LifecycleError, synchronously, on an event the chart forbids here. */
  send(type: LocalEvent['type']): LocalStatus {
    const before = this.actor.getSnapshot();
    // an ended request's actor has stopped: XState would drop the event (and, in development, warn)
    if (before.status !== 'active') throw new LifecycleError(before.value, type);
    this.actor.send({ type });
    const after = this.actor.getSnapshot();
    // every transition of the chart changes state: an event XState took none for left the snapshot as it was
    if (after === before) throw new LifecycleError(before.value, type);
    return after.value;
  }

  /** Runner cache handle; -1 while none is held. */
  get cacheId(): number {
    return this.cache?.id ?? -1;
  }
  /** Tokens in this model's cache for the request (its next step feeds tokens[fed..]). */
  get fed(): number {
    return this.cache?.fed ?? 0;
  }
}

// --- routing one row's result, pure: route → send (or stay), EOS and length limits, as data the step applies ---

/** What routing reads about one request on the model that just stepped it (a LocalRequest). Never mutated here (route may update `meta`, which it owns). */
export interface RowView {
  readonly spec: Pick<RequestSpec, 'id' | 'algorithm' | 'models' | 'drawSeed' | 'maxLength'>;
  /** The model that produced the result (1-based). */
  readonly model: ModelId;
  /** The committed sequence, prompt included; known[m]: how much of it model m has seen. */
  readonly tokens: readonly number[];
  readonly known: readonly number[];
  /** Forward passes on this model since it last arrived, this one included. */
  readonly stepsHere: number;
  readonly generated: number;
  readonly meta: unknown;
}

/** The decision for one row: `commit` is the token to append. A handoff whose kept token ends the request is a finish: nothing crosses. */
export type RowDecision =
  | { kind: 'stay'; commit: number }
  | { kind: 'finish'; reason: 'stop' | 'length'; commit?: number }
  | { kind: 'handoff'; to: ModelId; handoff: Handoff<unknown>; commit?: number; at: number }
  | { kind: 'fail'; fn: 'route' | 'send'; message: string };

/** `eos`: the stepping model's EOS ids; `stop`: the request's stop_token_ids. Either ends the request uncommitted. */
export function routeRow(v: RowView, sig: TokenSignals, eos: readonly number[], stop?: readonly number[]): RowDecision {
  const { spec, model: m } = v;
  const position = v.tokens.length;
  const input = routeInput(sig, m, position, v.stepsHere, v.generated, draw3(spec.drawSeed, position, m), v.meta);
  let target: ModelId;
  try {
    target = spec.algorithm.route(input);
  } catch (e) {
    return fail('route', e);
  }
  if (target === 0 || target === m) return commitOrFinish(v, sig.token, eos, stop) ?? { kind: 'stay', commit: sig.token };
  if (!Number.isInteger(target) || target < 0 || target > spec.models.length) {
    return { kind: 'fail', fn: 'route', message: `returned ${target}; expected 0 or a model id in 1..${spec.models.length}` };
  }
  const anchor = v.known[target];
  const sendReq: SendRequest<unknown> = {
    requestId: spec.id,
    from: m,
    to: target,
    result: input,
    unseen: v.tokens.slice(anchor),
    anchor,
    meta: input.meta,
  };
  let handoff: Handoff<unknown>;
  try {
    handoff = spec.algorithm.send ? spec.algorithm.send(sendReq) : standardSend(sendReq, true);
    checkHandoff(handoff, sendReq);
  } catch (e) {
    return fail('send', e);
  }
  if (!handoff.keep) return { kind: 'handoff', to: target, handoff, at: v.generated };
  return commitOrFinish(v, sig.token, eos, stop) ?? { kind: 'handoff', to: target, handoff, commit: sig.token, at: v.generated };
}

/** An arriving handoff through the algorithm's `receive` (the entry's first placement skips it: there is nothing to receive). */
export function receiveRow(algorithm: Algorithm<unknown>, handoff: Handoff<unknown>): { meta: unknown } | { fail: string } {
  if (handoff.from === 0) return { meta: handoff.meta };
  try {
    return { meta: (algorithm.receive ?? standardReceive)(handoff).meta };
  } catch (e) {
    return { fail: e instanceof Error ? e.message : String(e) };
  }
}

/** An EOS or stop id ends the request uncommitted; the token that reaches the length limit is committed and ends it. */
function commitOrFinish(v: RowView, token: number, eos: readonly number[], stop: readonly number[] | undefined): RowDecision | null {
  if (eos.includes(token) || (stop !== undefined && stop.includes(token))) return { kind: 'finish', reason: 'stop' };
  if (v.tokens.length + 1 >= v.spec.maxLength) return { kind: 'finish', reason: 'length', commit: token };
  return null;
}

function fail(fn: 'route' | 'send', e: unknown): RowDecision {
  return { kind: 'fail', fn, message: e instanceof Error ? e.message : String(e) };
}

/** A custom send must still carry exactly the unseen suffix, anchored where the peer's view ends. */
function checkHandoff(h: Handoff<unknown>, req: SendRequest<unknown>): void {
  if (h.anchor !== req.anchor || h.to !== req.to || h.from !== req.from || h.requestId !== req.requestId) {
    throw new Error(`handoff for ${req.requestId} must go ${req.from}→${req.to} at anchor ${req.anchor}`);
  }
  const expected = req.unseen.length + (h.keep ? 1 : 0);
  if (h.tokens.length !== expected || (h.keep && h.tokens[expected - 1] !== req.result.token)) {
    throw new Error(`handoff for ${req.requestId} must carry the ${req.unseen.length} unseen tokens${h.keep ? ' plus the kept token' : ''}`);
  }
}

// --- the output processor (vLLM v1's OutputProcessor, one request at a time): a committed token's text delta; stop strings end the request ---

/** A request's text before its first token; it then travels with every handoff, so whichever engine owns the request continues it. */
export function newTextState(): TextState {
  return { detok: newDetokState(), count: 0, tail: '', tailAt: 0, emitted: 0, stopAt: -1 };
}

/** Text is kept back as far as a stop string can reach, shown up to where one may still be forming; the tail travels, so one may span a handoff. */
export class OutputProcessor {
  private readonly tok: Decoder;

  constructor(tok: Decoder) {
    this.tok = memoDecoder(tok);
  }

  /** Appends a committed token; returns the text the client may see now. `s.stopAt >= 0` afterwards: a stop string matched. */
  push(s: TextState, spec: Pick<RequestSpec, 'text' | 'minTokens'>, token: number): string {
    s.tail += detokPush(this.tok, s.detok, token);
    s.count++;
    const stop = spec.text?.stop ?? [];
    let hold = 0;
    let reach = 0;
    if (stop.length > 0) {
      if (s.count >= spec.minTokens) {
        for (const str of stop) {
          const k = s.tail.indexOf(str, Math.max(0, s.emitted - str.length) - s.tailAt);
          if (k >= 0 && (s.stopAt < 0 || k + s.tailAt < s.stopAt)) s.stopAt = k + s.tailAt;
        }
      }
      for (const str of stop) reach = Math.max(reach, str.length);
      hold = reach - 1;
    }
    const limit = s.stopAt >= 0 ? s.stopAt : s.tailAt + s.tail.length - hold;
    if (limit <= s.emitted) return '';
    const delta = s.tail.slice(s.emitted - s.tailAt, limit - s.tailAt);
    s.emitted = limit;
    const keep = s.emitted - reach;
    if (keep > s.tailAt) {
      s.tail = s.tail.slice(keep - s.tailAt);
      s.tailAt = keep;
    }
    return delta;
  }

  /** The request ended on this engine: what the client has not seen yet (text held back, a character never completed). */
  finish(s: TextState): string {
    if (s.stopAt < 0) s.tail += detokFlush(this.tok, s.detok);
    const end = s.stopAt >= 0 ? s.stopAt : s.tailAt + s.tail.length;
    if (end <= s.emitted) return '';
    const rest = s.tail.slice(s.emitted - s.tailAt, end - s.tailAt);
    s.emitted = end;
    return rest;
  }
}
