// The local request lifecycle on one sub-server, as a statechart: each local request is an actor of it.
import { setup } from 'xstate';
import type { LocalStatus } from '../../shared/trace.ts';

export type LocalEvent =
  | { type: 'ADMIT' } // a cache slot was granted
  | { type: 'HANDOFF' } // the request left for a peer; keep cache, bookkeeping and admission
  | { type: 'RETURN' } // back from a peer with the cache still held: append and resume
  | { type: 'REQUEUE' } // back from a peer after the cache was evicted: admit again, recompute
  | { type: 'FINISH' }
  | { type: 'CANCEL' }
  | { type: 'FAIL' };

const ends = { FINISH: 'done', CANCEL: 'cancelled', FAIL: 'failed' } as const;

/** The source of truth for where a request is on a sub-server; each local request is an actor of it. */
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

/** The events by name (the machine reads only `type`). */
export const LOCAL_EVENTS: { readonly [T in LocalEvent['type']]: Readonly<Extract<LocalEvent, { type: T }>> } = {
  ADMIT: { type: 'ADMIT' },
  HANDOFF: { type: 'HANDOFF' },
  RETURN: { type: 'RETURN' },
  REQUEUE: { type: 'REQUEUE' },
  FINISH: { type: 'FINISH' },
  CANCEL: { type: 'CANCEL' },
  FAIL: { type: 'FAIL' },
};

/** The event that ends a local request the way its request ended. */
export function endEvent(status: 'done' | 'failed' | 'cancelled'): LocalEvent {
  return { type: status === 'done' ? 'FINISH' : status === 'failed' ? 'FAIL' : 'CANCEL' };
}
