// The request actor at the entry: admitted → streaming committed tokens → done | failed | cancelled.
import { setup } from 'xstate';
import type { RequestStatus } from '../../shared/trace.ts';
import { deriveTable, tableLogic } from './tableLogic.ts';

export type RequestEvent =
  | { type: 'FIRST_TOKEN' }
  | { type: 'FINISH' }
  | { type: 'FAIL'; error: Error }
  | { type: 'CANCEL' };

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

/** The request actor's logic: the chart above as a table (one actor per request, so it must be cheap). */
export const requestLogic = tableLogic<RequestStatus, RequestEvent>(deriveTable(requestMachine), 'admitted');
