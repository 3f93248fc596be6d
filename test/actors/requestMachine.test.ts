// The entry's request actor runs a table derived from its chart: the table must be exactly the chart's behaviour.
import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, transition } from 'xstate';
import { REQUEST_STATES } from '../../shared/trace.ts';
import { requestLogic, requestMachine, type RequestEvent } from '../../runtime/actors/requestMachine.ts';
import { deriveTable } from '../../runtime/actors/tableLogic.ts';

const EVENTS: RequestEvent[] = [{ type: 'FIRST_TOKEN' }, { type: 'FINISH' }, { type: 'FAIL', error: new Error('x') }, { type: 'CANCEL' }];

describe('request actor', () => {
  it('its table agrees with XState transition() for every state × event', () => {
    const table = deriveTable(requestMachine) as Record<string, Record<string, string | undefined>>;
    let moved = 0;
    for (const state of REQUEST_STATES) {
      for (const event of EVENTS) {
        const [init] = initialTransition(requestMachine);
        const start = requestMachine.resolveState({ ...init, value: state } as typeof init);
        const [next] = transition(requestMachine, start, event);
        const expected = next.value === state ? undefined : (next.value as string);
        expect(table[state][event.type], `${state} × ${event.type}`).toBe(expected);
        if (expected) moved++;
      }
    }
    // admitted: 4 ways out, streaming: 3, the final states none
    expect(moved).toBe(7);
  });

  it('runs admitted → streaming → done and stays put on an event its state has no transition for', () => {
    const a = createActor(requestLogic).start();
    expect(a.getSnapshot().context).toBe('admitted');
    a.send({ type: 'FIRST_TOKEN' });
    a.send({ type: 'FIRST_TOKEN' });
    expect(a.getSnapshot().context).toBe('streaming');
    a.send({ type: 'FINISH' });
    a.send({ type: 'CANCEL' });
    expect(a.getSnapshot().context).toBe('done');
  });
});
