// A flat statechart as a transition table, and the cheap actor logic that runs it: the chart stays the source of truth.
import type { AnyStateMachine, EventObject, TransitionActorLogic, TransitionSnapshot } from 'xstate';

export type TransitionTable<S extends string, E extends string> = Record<S, Partial<Record<E, S>>>;

/** Flattens a chart of top-level states with plain targets into state × event → state. */
export function deriveTable<S extends string, E extends string>(machine: AnyStateMachine): TransitionTable<S, E> {
  const table = {} as TransitionTable<S, E>;
  for (const [key, node] of Object.entries(machine.root.states)) {
    const row: Partial<Record<E, S>> = {};
    for (const [event, transitions] of node.transitions) {
      const target = transitions[0]?.target?.[0];
      if (target) row[event as E] = target.key as S;
    }
    table[key as S] = row;
  }
  return table;
}

/**
 * Actor logic whose snapshot's context is the state: many are created per second (one per request
 * and per visit), and a table lookup costs a fraction of a full machine's microstep. It is
 * `fromTransition`'s logic written out so a transition builds its snapshot as a literal (no object
 * spread) and one that changes nothing keeps the snapshot it had. It never throws (an error inside
 * an actor surfaces later, out of context); an event the chart does not allow leaves the state as it is.
 */
export function tableLogic<S extends string, E extends EventObject>(table: TransitionTable<S, E['type']>, initial: S): TransitionActorLogic<S, E, unknown> {
  const transition = (state: S, event: E): S => table[state][event.type as E['type']] ?? state;
  return {
    config: transition,
    transition: (snapshot: TransitionSnapshot<S>, event: E): TransitionSnapshot<S> => {
      const next = table[snapshot.context][event.type as E['type']];
      return next === undefined ? snapshot : { status: 'active', output: undefined, error: undefined, context: next };
    },
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined, context: initial }),
    getPersistedSnapshot: (snapshot) => snapshot,
    restoreSnapshot: (snapshot) => snapshot as TransitionSnapshot<S>,
  };
}
