// The local request lifecycle on one sub-server, as a statechart, and the actor logic derived from it.
import { setup } from 'xstate';
import type { LocalStatus } from '../../shared/trace.ts';
import { deriveTable, tableLogic, type TransitionTable } from './tableLogic.ts';

export type LocalEvent =
  | { type: 'ADMIT' } // a cache slot was granted
  | { type: 'HANDOFF' } // the request left for a peer; keep cache, bookkeeping and admission
  | { type: 'RETURN' } // back from a peer with the cache still held: append and resume
  | { type: 'REQUEUE' } // back from a peer after the cache was evicted: admit again, recompute
  | { type: 'FINISH' }
  | { type: 'CANCEL' }
  | { type: 'FAIL' };

const ends = { FINISH: 'done', CANCEL: 'cancelled', FAIL: 'failed' } as const;

/**
 * The source of truth for where a request is on a sub-server. Hand-off and resume happen many
 * times per request, so the actor that runs it uses a transition table derived from this chart
 * (see `localRequestLogic`); a test checks the table against XState's own `transition()`.
 */
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

/** Flattens the chart's transitions into state × event → state. */
export function deriveTransitionTable(): TransitionTable<LocalStatus, LocalEvent['type']> {
  return deriveTable(localRequestMachine);
}

const table = deriveTransitionTable();

export class LifecycleError extends Error {
  constructor(
    readonly from: LocalStatus,
    readonly event: LocalEvent['type'],
  ) {
    super(`local request: no transition for ${event} in state ${from}`);
  }
}

/** Lifecycle step; throws on an event the chart does not allow there, so a scheduler bug is loud. */
export function nextLocalStatus(state: LocalStatus, event: LocalEvent): LocalStatus {
  const next = table[state][event.type];
  if (next === undefined) throw new LifecycleError(state, event.type);
  return next;
}

/** XState actor logic for one local request; callers validate with `nextLocalStatus` first. */
export const localRequestLogic = tableLogic<LocalStatus, LocalEvent>(table, 'queued');

/** The events by name (the logic reads only `type`). */
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

export function isFinalLocal(s: LocalStatus): boolean {
  return s === 'done' || s === 'cancelled' || s === 'failed';
}
