// The entry's request actor is XState's own actor of its chart: status is the snapshot's value.
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { REQUEST_STATES } from '../../shared/trace.ts';
import { requestMachine, type RequestEvent } from '../../runtime/entry/requestState.ts';

const EVENTS: RequestEvent[] = [{ type: 'FIRST_TOKEN' }, { type: 'FINISH' }, { type: 'FAIL' }, { type: 'CANCEL' }];

describe('request actor', () => {
  it('its chart has the states the trace names; admitted moves 4 ways, streaming 3, a final state none', () => {
    expect(Object.keys(requestMachine.root.states).sort()).toEqual([...REQUEST_STATES].sort());
    const ways = (path: RequestEvent[]) => {
      const a = createActor(requestMachine).start();
      for (const e of path) a.send(e);
      return EVENTS.filter((e) => a.getSnapshot().can(e)).map((e) => e.type);
    };
    expect(ways([])).toEqual(['FIRST_TOKEN', 'FINISH', 'FAIL', 'CANCEL']);
    expect(ways([{ type: 'FIRST_TOKEN' }])).toEqual(['FINISH', 'FAIL', 'CANCEL']);
    expect(ways([{ type: 'CANCEL' }])).toEqual([]);
  });

  it('runs admitted → streaming → done, and a final state ends the actor', () => {
    const a = createActor(requestMachine).start();
    expect(a.getSnapshot().value).toBe('admitted');
    a.send({ type: 'FIRST_TOKEN' });
    a.send({ type: 'FIRST_TOKEN' });
    expect(a.getSnapshot().value).toBe('streaming');
    a.send({ type: 'FINISH' });
    expect(a.getSnapshot().value).toBe('done');
    expect(a.getSnapshot().status).toBe('done');
  });

  it('fails or is cancelled from either live state', () => {
    for (const path of [[], [{ type: 'FIRST_TOKEN' }]] as RequestEvent[][]) {
      for (const [end, state] of [
        [{ type: 'FAIL' }, 'failed'],
        [{ type: 'CANCEL' }, 'cancelled'],
      ] as const) {
        const a = createActor(requestMachine).start();
        for (const e of path) a.send(e);
        a.send(end);
        expect(a.getSnapshot().value).toBe(state);
      }
    }
  });
});
