// A request as one sub-server holds it: its lifecycle actor, cache handle and step bookkeeping.
import { createActor, type Actor } from 'xstate';
import type { ModelId, StepWants } from '../../shared/algorithm.ts';
import { wantsFor } from '../../shared/algorithm.ts';
import type { LocalStatus } from '../../shared/trace.ts';
import { localRequestLogic, nextLocalStatus, type LocalEvent } from '../actors/localRequestMachine.ts';
import type { RequestState } from './requestState.ts';

let nextCacheId = 1;

export class LocalRequest {
  readonly actor: Actor<typeof localRequestLogic>;
  /** Runner cache handle; -1 while none is held (queued, or evicted while pending-return). */
  cacheId = -1;
  /** Tokens in this model's cache for the request (its next step feeds tokens[fed..]). */
  fed = 0;
  /** Tokens reserved in the pool for this request while it holds a cache. */
  reserved = 0;
  stepsHere = 0;
  inReady = false;
  inBatch = false;
  /** Clock time it became ready, for FIFO and wait accounting. */
  readySince = 0;
  readonly wants: StepWants;

  constructor(
    readonly req: RequestState,
    readonly model: ModelId,
  ) {
    this.actor = createActor(localRequestLogic);
    this.actor.start();
    this.wants = wantsFor(req.algorithm, model);
  }

  get status(): LocalStatus {
    return this.actor.getSnapshot().context;
  }

  /** Moves the lifecycle; throws LifecycleError, synchronously, on an event the chart forbids here. */
  send(event: LocalEvent): LocalStatus {
    const next = nextLocalStatus(this.status, event);
    this.actor.send(event);
    return next;
  }

  get hasCache(): boolean {
    return this.cacheId >= 0;
  }

  static newCacheId(): number {
    return nextCacheId++;
  }
}
