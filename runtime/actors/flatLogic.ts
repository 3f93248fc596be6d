// A flat statechart with guards, assign actions, eventless and delayed transitions, run as cheap actor logic derived from the chart itself.
import type { ActorLogic, ActorScope, ActorSystem, AnyActorRef, AnyStateMachine, EventObject } from 'xstate';

/** The snapshot: the chart's state as `value`, its context, nothing else (no history, no children). */
export type FlatSnapshot<C, S extends string = string> = { readonly status: 'active'; readonly output: undefined; readonly error: undefined; readonly value: S; readonly context: C };

type Args<C> = { context: C; event: EventObject; self: AnyActorRef };
type Guard<C> = (args: Args<C>) => boolean;
type Assigner<C> = (context: C, args: Args<C>) => C;

interface FlatTransition<C> {
  /** null: targetless (actions only, nothing is exited or entered). */
  readonly target: string | null;
  readonly reenter: boolean;
  readonly guard: Guard<C> | null;
  readonly assigns: readonly Assigner<C>[];
}

interface FlatState<C> {
  readonly on: ReadonlyMap<string, readonly FlatTransition<C>[]>;
  readonly always: readonly FlatTransition<C>[];
  /** A delayed transition's event, armed on entry and cancelled on exit. */
  readonly after: { readonly event: EventObject; readonly delay: (args: Args<C>) => number } | null;
}

/** The chart uses something this logic does not run: refused when the logic is derived, not later. */
export class UnsupportedChartError extends Error {}

type Impl = { guards: Record<string, unknown>; actions: Record<string, unknown>; delays: Record<string, unknown> };

function guardOf<C>(impl: Impl, g: unknown): Guard<C> | null {
  if (g === undefined) return null;
  const fn = typeof g === 'string' ? impl.guards[g] : g;
  if (typeof fn !== 'function') throw new UnsupportedChartError(`guard ${String(g)}: only named or inline guard functions`);
  return (args) => Boolean((fn as (a: Args<C>, p: undefined) => unknown)(args, undefined));
}

function assignOf<C>(impl: Impl, a: unknown): Assigner<C> {
  const action = (typeof a === 'string' ? impl.actions[a] : a) as { type?: string; assignment?: unknown } | undefined;
  if (action?.type !== 'xstate.assign') throw new UnsupportedChartError(`action ${String(a)}: only assign actions`);
  const assignment = action.assignment;
  if (typeof assignment === 'function') return (context, args) => ({ ...context, ...(assignment as (a: Args<C>) => Partial<C>)(args) });
  const entries = Object.entries(assignment as Record<string, unknown>);
  return (context, args) => {
    const next = { ...context } as Record<string, unknown>;
    for (const [key, value] of entries) next[key] = typeof value === 'function' ? (value as (a: Args<C>) => unknown)(args) : value;
    return next as C;
  };
}

interface ChartTransition {
  target?: { key: string }[];
  reenter: boolean;
  guard?: unknown;
  actions: unknown[];
}

/**
 * Reads a flat machine (top-level states only) into transitions with their guards and assigns
 * resolved. Entry and exit actions other than those `after` adds are refused, as are nested states.
 */
function readChart<C>(machine: AnyStateMachine): Map<string, FlatState<C>> {
  const impl = machine.implementations as unknown as Impl;
  const states = new Map<string, FlatState<C>>();
  const transition = (t: ChartTransition): FlatTransition<C> => ({
    target: t.target?.[0]?.key ?? null,
    reenter: t.reenter,
    guard: guardOf<C>(impl, t.guard),
    assigns: t.actions.map((a) => assignOf<C>(impl, a)),
  });
  for (const [key, node] of Object.entries(machine.root.states)) {
    if (Object.keys(node.states).length > 0) throw new UnsupportedChartError(`state ${key}: nested states`);
    const after = node.after as unknown as ({ eventType: string; delay: unknown } & ChartTransition)[];
    if (after.length > 1) throw new UnsupportedChartError(`state ${key}: one delayed transition at most`);
    const timers = after.length;
    if (node.entry.length !== timers || node.exit.length !== timers) throw new UnsupportedChartError(`state ${key}: entry or exit actions`);
    const on = new Map<string, FlatTransition<C>[]>();
    for (const [event, ts] of node.transitions) on.set(event, (ts as unknown as ChartTransition[]).map(transition));
    let timer: FlatState<C>['after'] = null;
    if (timers === 1) {
      const d = after[0].delay;
      const fn = typeof d === 'number' ? () => d : impl.delays[d as string];
      if (typeof fn !== 'function') throw new UnsupportedChartError(`state ${key}: delay ${String(d)}`);
      timer = { event: { type: after[0].eventType }, delay: (args) => (fn as (a: Args<C>, p: undefined) => number)(args, undefined) };
    }
    states.set(key, { on, always: ((node.always ?? []) as unknown as ChartTransition[]).map(transition), after: timer });
  }
  return states;
}

/**
 * Actor logic that runs a flat chart as xstate would (the first enabled transition in document
 * order; exit, transition actions, entry; eventless transitions after every event; a delayed
 * transition's timer armed on entry and cancelled on exit; a self-transition re-enters only with
 * `reenter`) without a machine's per-event machinery: an event no transition takes returns the
 * snapshot it had. The lane actor steps once per batch, and a full macrostep cost ≈ 4 µs of the
 * simulator's time (the overhead suite); a test runs it against the machine for every event
 * sequence and guard outcome it draws. Context comes from the machine's `context(input)`.
 */
export function flatLogic<C extends object, E extends EventObject, I, S extends string = string>(machine: AnyStateMachine): ActorLogic<FlatSnapshot<C, S>, E, I> {
  const states = readChart<C>(machine);
  const initial = machine.root.initial?.target?.[0]?.key as S | undefined;
  if (!initial) throw new UnsupportedChartError('no initial state');
  // start() cannot move the snapshot, so the initial state may not leave at once
  if (states.get(initial)!.always.length > 0) throw new UnsupportedChartError(`initial state ${initial}: eventless transitions`);
  const makeContext = machine.config.context as ((a: { input: I }) => C) | C;
  const timerId = (state: string) => `flat.after.${state}`;

  // biome-ignore lint/suspicious/noExplicitAny: xstate's own AnyActorSystem, which it does not export
  type Scope = ActorScope<FlatSnapshot<C, S>, E, ActorSystem<any>>;
  const exit = (state: string, scope: Scope) => {
    if (states.get(state)!.after) scope.system.scheduler.cancel(scope.self, timerId(state));
  };
  const enter = (state: string, context: C, event: EventObject, scope: Scope) => {
    const after = states.get(state)!.after;
    if (after) scope.system.scheduler.schedule(scope.self, scope.self, after.event, after.delay({ context, event, self: scope.self }), timerId(state));
  };
  /** One microstep: exit, the transition's assigns (each sees the context the last one left in `args`), entry; returns the state entered. */
  const take = (from: S, t: FlatTransition<C>, args: Args<C>, scope: Scope): S => {
    const moves = t.target !== null && (t.target !== from || t.reenter);
    if (moves) exit(from, scope);
    for (const assign of t.assigns) args.context = assign(args.context, args);
    const value = (t.target ?? from) as S;
    if (moves) enter(value, args.context, args.event, scope);
    return value;
  };
  const enabled = (ts: readonly FlatTransition<C>[] | undefined, args: Args<C>) => {
    if (ts) for (const t of ts) if (!t.guard || t.guard(args)) return t;
    return undefined;
  };
  const snapshot = (value: S, context: C): FlatSnapshot<C, S> => ({ status: 'active', value, context, output: undefined, error: undefined });

  return {
    config: machine,
    transition: (snap, event, scope) => {
      const args: Args<C> = { context: snap.context, event, self: scope.self };
      const t = enabled(states.get(snap.value)!.on.get(event.type), args);
      let value = t ? take(snap.value, t, args, scope) : snap.value;
      // eventless transitions until none is enabled (a chart that loops forever is refused after 100)
      for (let n = 0; ; n++) {
        const next = enabled(states.get(value)!.always, args);
        if (!next) break;
        if (n === 100) throw new UnsupportedChartError(`eventless transitions loop in state ${value}`);
        value = take(value, next, args, scope);
      }
      return value === snap.value && args.context === snap.context ? snap : snapshot(value, args.context);
    },
    getInitialSnapshot: (_scope, input) => snapshot(initial, typeof makeContext === 'function' ? (makeContext as (a: { input: I }) => C)({ input: input as I }) : makeContext),
    start: (snap, scope) => {
      enter(snap.value, snap.context, { type: 'xstate.init' }, scope);
    },
    getPersistedSnapshot: (snap) => snap,
    restoreSnapshot: (snap) => snap as FlatSnapshot<C, S>,
  };
}
