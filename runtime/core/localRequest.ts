// A request as one engine holds it: its lifecycle actor and chart, cache handle, and the routing state that travels with handoffs.
import { createActor, setup } from 'xstate';
import type { Algorithm, ModelId, StepWants } from '../../shared/algorithm.ts';
import { wantsFor } from '../../shared/algorithm.ts';
import type { LocalStatus } from '../../shared/trace.ts';
import type { RequestCounters, TextState, WireSpec } from '../../shared/protocol/engineProtocol.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ConstraintState } from '../grammar/constraintState.ts';

export type { RequestCounters } from '../../shared/protocol/engineProtocol.ts';

/** What never changes about a request once submitted, every engine it visits reads the same: the wire spec with the algorithm itself. */
export type RequestSpec = Readonly<Omit<WireSpec, 'algorithm'>> & {
  readonly algorithm: Algorithm<unknown>;
  /** The algorithm by reference, for engines in other threads (absent: in-process engines only). */
  readonly ref?: AlgorithmRef;
};

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
  /** When it last left for a peer (LaneQueues numbers handoffs): pending-return caches are evicted oldest first. */
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
