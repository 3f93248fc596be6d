// The request actor at the entry: admitted → streaming committed tokens → done | failed | cancelled.
import { setup } from 'xstate';

export type RequestEvent = { type: 'FIRST_TOKEN' } | { type: 'FINISH' } | { type: 'FAIL'; error: Error } | { type: 'CANCEL' };

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
