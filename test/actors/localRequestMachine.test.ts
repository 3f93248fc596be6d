// The derived transition table must be exactly the statechart's behaviour.
import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { LOCAL_STATES } from '../../shared/trace.ts';
import { deriveTransitionTable, localRequestMachine, nextLocalStatus, LifecycleError, type LocalEvent } from '../../runtime/actors/localRequestMachine.ts';

const EVENTS: LocalEvent['type'][] = ['ADMIT', 'HANDOFF', 'RETURN', 'REQUEUE', 'FINISH', 'CANCEL', 'FAIL'];

describe('local request lifecycle', () => {
  it('derived table agrees with XState transition() for every state × event', () => {
    const table = deriveTransitionTable();
    let checked = 0;
    for (const state of LOCAL_STATES) {
      for (const type of EVENTS) {
        const [init] = initialTransition(localRequestMachine);
        const start = localRequestMachine.resolveState({ ...init, value: state } as typeof init);
        const [next] = transition(localRequestMachine, start, { type } as LocalEvent);
        const expected = next.value === state && !table[state][type] ? undefined : (next.value as string);
        expect(table[state][type], `${state} × ${type}`).toBe(expected);
        checked++;
      }
    }
    expect(checked).toBe(LOCAL_STATES.length * EVENTS.length);
  });

  it('encodes running → pending-return → resume / done', () => {
    let s = nextLocalStatus('queued', { type: 'ADMIT' });
    expect(s).toBe('running');
    s = nextLocalStatus(s, { type: 'HANDOFF' });
    expect(s).toBe('pending-return');
    expect(nextLocalStatus(s, { type: 'RETURN' })).toBe('running');
    expect(nextLocalStatus(s, { type: 'REQUEUE' })).toBe('queued');
    expect(nextLocalStatus(s, { type: 'FINISH' })).toBe('done');
  });

  it('refuses events the chart does not allow', () => {
    expect(() => nextLocalStatus('queued', { type: 'HANDOFF' })).toThrow(LifecycleError);
    expect(() => nextLocalStatus('done', { type: 'RETURN' })).toThrow(LifecycleError);
    expect(() => nextLocalStatus('running', { type: 'ADMIT' })).toThrow(LifecycleError);
  });
});
