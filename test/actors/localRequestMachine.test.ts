// A local request's lifecycle is an XState actor of its chart: its status is the snapshot, a forbidden event is loud.
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { LOCAL_STATES, type LocalStatus } from '../../shared/trace.ts';
import { LifecycleError, localRequestMachine, LOCAL_EVENTS, type LocalEvent } from '../../runtime/core/localRequest.ts';
import { LocalRequest, newCounters } from '../../runtime/core/localRequest.ts';
import { requestSpec } from '../../runtime/entry/requestState.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';

const EVENTS = LOCAL_EVENTS;

function local(): LocalRequest {
  const spec = requestSpec('r1', 1, { algorithm: markovAlgorithm(r2rMarkov(0.35)), prompt: [1, 2, 3], maxTokens: 8 }, 1024);
  return new LocalRequest(spec, 1, [1, 2, 3], [0, 0, 0], undefined, newCounters(2));
}

/** The events that lead from queued to `state`. */
const PATH: Record<LocalStatus, LocalEvent['type'][]> = {
  queued: [],
  running: ['ADMIT'],
  'pending-return': ['ADMIT', 'HANDOFF'],
  done: ['FINISH'],
  cancelled: ['CANCEL'],
  failed: ['FAIL'],
};

describe('local request lifecycle', () => {
  it('runs queued → running → pending-return → resume or requeue → done, its status read off the snapshot', () => {
    const l = local();
    expect(l.status).toBe('queued');
    expect(l.send('ADMIT')).toBe('running');
    expect(l.owned).toBe(true);
    expect(l.send('HANDOFF')).toBe('pending-return');
    expect(l.owned).toBe(false);
    expect(l.send('RETURN')).toBe('running');
    l.send('HANDOFF');
    expect(l.send('REQUEUE')).toBe('queued');
    expect(l.ended).toBe(false);
    expect(l.send('FINISH')).toBe('done');
    expect(l.ended).toBe(true);
    expect(l.actor.getSnapshot().status).toBe('done');
  });

  it('LocalRequest.send refuses, before any move, exactly the events the chart does not take (every state × event)', () => {
    let refused = 0;
    for (const state of LOCAL_STATES) {
      for (const type of EVENTS) {
        const l = local();
        for (const e of PATH[state]) l.send(e);
        expect(l.status).toBe(state);
        // XState's own answer, from a bare actor of the chart driven the same way
        const bare = createActor(localRequestMachine).start();
        for (const e of PATH[state]) bare.send({ type: e });
        const allowed = bare.getSnapshot().can({ type });
        if (allowed) expect(l.send(type), `${state} × ${type}`).not.toBe(state);
        else {
          expect(() => l.send(type), `${state} × ${type}`).toThrow(LifecycleError);
          expect(l.status).toBe(state);
          refused++;
        }
      }
    }
    // queued refuses HANDOFF, RETURN, REQUEUE; running ADMIT, RETURN, REQUEUE; pending-return ADMIT, HANDOFF; each final state all 7
    expect(refused).toBe(3 + 3 + 2 + 3 * 7);
  });

  it('names the state and the event it refused', () => {
    const l = local();
    expect(() => l.send('HANDOFF')).toThrow('no transition for HANDOFF in state queued');
  });
});
