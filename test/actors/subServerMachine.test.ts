// The engine actor run by XState itself: launches as actions, the deadline as an `after` delay on the clock, guards on the facts the events carry.
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock, transition } from 'xstate';
import { NO_WORK, subServerMachine, type LaunchFacts, type SubServerEvent } from '../../runtime/core/engineLoop.ts';
import { mulberry32 as draws } from '../../shared/rng.ts';

const factsOf = (ready: boolean, mayLaunch: boolean, atDeadline = ready): LaunchFacts => ({
  ready,
  mayLaunch: ready && mayLaunch,
  atDeadline: ready && atDeadline,
});
const LAUNCHABLE = factsOf(true, true);
const BELOW = factsOf(true, false); // ready, below threshold: may launch at the deadline
const BARRIER = factsOf(true, false, false); // ready, a sync barrier closed

function engineActor(maxWaitMs = 10) {
  const clock = new SimulatedClock();
  /** Each launch's `down` param, in order. */
  const launches: boolean[] = [];
  const machine = subServerMachine.provide({ actions: { launch: (_, { down }) => void launches.push(down) } });
  const actor = createActor(machine, { input: { maxWaitMs }, clock }).start();
  const send = (type: Exclude<SubServerEvent['type'], 'SCHEDULE'>, l: LaunchFacts = NO_WORK) => actor.send({ type, facts: l });
  return { actor, clock, launches, send, value: () => actor.getSnapshot().value };
}

describe('engine actor (subServerMachine under createActor)', () => {
  it('launches when the engine may, and holds that one batch until BATCH_DONE', () => {
    const l = engineActor();
    expect(l.value()).toBe('idle');
    l.send('WORK', LAUNCHABLE);
    expect(l.value()).toBe('executing');
    l.send('WORK', LAUNCHABLE);
    expect(l.launches).toEqual([false]);
    l.send('BATCH_DONE', LAUNCHABLE);
    expect(l.value()).toBe('executing');
    expect(l.launches).toEqual([false, false]);
    l.send('BATCH_DONE', BELOW);
    expect(l.value()).toBe('collecting');
    l.send('WORK', NO_WORK);
    expect(l.value()).toBe('idle');
    expect(l.launches).toHaveLength(2);
  });

  it('collects below threshold and launches at the max-wait deadline, on the clock it was given', () => {
    const l = engineActor(10);
    l.send('WORK', BELOW);
    expect(l.value()).toBe('collecting');
    l.clock.increment(9);
    expect(l.launches).toEqual([]);
    l.clock.increment(1);
    expect(l.value()).toBe('executing');
    expect(l.launches).toEqual([false]);
  });

  it('the deadline launches nothing the engine no longer holds, nor past a closed barrier', () => {
    const gone = engineActor(10);
    gone.send('WORK', BELOW);
    gone.send('WORK', NO_WORK);
    gone.clock.increment(100);
    expect([gone.value(), gone.launches]).toEqual(['idle', []]);
    const barrier = engineActor(10);
    barrier.send('WORK', BARRIER);
    barrier.clock.increment(100);
    expect([barrier.value(), barrier.launches]).toEqual(['collecting', []]);
    // the barrier opens: a launch at once
    barrier.send('WORK', LAUNCHABLE);
    expect([barrier.value(), barrier.launches]).toEqual(['executing', [false]]);
  });

  it('a new schedule re-arms the deadline with the max wait now in force (Infinity: none)', () => {
    const l = engineActor(10);
    l.send('WORK', BELOW);
    l.clock.increment(6);
    l.actor.send({ type: 'SCHEDULE', facts: BELOW, maxWaitMs: 10 });
    l.clock.increment(6);
    expect(l.launches).toEqual([]);
    l.clock.increment(4);
    expect(l.launches).toEqual([false]);
    const never = engineActor(10);
    never.send('WORK', BELOW);
    never.actor.send({ type: 'SCHEDULE', facts: BELOW, maxWaitMs: Infinity });
    never.clock.increment(1e9);
    expect(never.launches).toEqual([]);
    // a lower threshold lets the batch start at once
    never.actor.send({ type: 'SCHEDULE', facts: LAUNCHABLE, maxWaitMs: Infinity });
    expect([never.value(), never.launches]).toEqual(['executing', [false]]);
  });

  it('down: the batch in flight fails on, and each launch from down fails at once (params.down)', () => {
    const l = engineActor();
    l.send('WORK', LAUNCHABLE);
    l.send('DOWN', NO_WORK);
    expect(l.value()).toBe('failing');
    l.send('BATCH_DONE', BELOW); // the deadline's rule: down launches whatever is ready
    expect([l.value(), l.launches]).toEqual(['failing', [false, true]]);
    l.send('BATCH_DONE', NO_WORK);
    expect(l.value()).toBe('down');
    l.send('WORK', BARRIER);
    expect(l.launches).toHaveLength(2);
    l.send('WORK', BELOW);
    expect([l.value(), l.launches]).toEqual(['failing', [false, true, true]]);
    l.send('UP', NO_WORK);
    expect(l.value()).toBe('executing');
    l.send('BATCH_DONE', NO_WORK);
    expect(l.value()).toBe('idle');
    l.send('DOWN', NO_WORK);
    l.send('UP', LAUNCHABLE);
    expect([l.value(), l.launches]).toEqual(['executing', [false, true, true, false]]);
  });

  it('a transition returns its launch as an action to run, not run (XState transition(): effects are actions)', () => {
    const idle = createActor(subServerMachine, { input: { maxWaitMs: 10 } }).getSnapshot();
    const [next, actions] = transition(subServerMachine, idle, { type: 'WORK', facts: LAUNCHABLE });
    expect(next.value).toBe('executing');
    expect(actions.map((a) => [a.type, a.params])).toContainEqual(['launch', { down: false }]);
    const [same] = transition(subServerMachine, idle, { type: 'WORK', facts: BELOW });
    expect(same.value).toBe('collecting');
  });

  it('over random event sequences: a batch is in flight exactly when executing or failing, and every launch was allowed', () => {
    const visited = new Set<string>();
    let timerLaunches = 0;
    for (let trial = 0; trial < 200; trial++) {
      const rnd = draws(trial + 1);
      const l = engineActor(1 + Math.floor(rnd() * 20));
      // the engine's side: a BATCH_DONE only for a batch it launched
      let done = 0;
      for (let step = 0; step < 40; step++) {
        const facts = factsOf(rnd() < 0.6, rnd() < 0.5, rnd() < 0.5);
        const before = l.launches.length;
        const r = rnd();
        if (r < 0.25) l.clock.increment(Math.floor(rnd() * 25));
        else if (r < 0.5 && l.launches.length > done) {
          done++;
          l.send('BATCH_DONE', facts);
        } else if (r < 0.6) l.actor.send({ type: 'SCHEDULE', facts, maxWaitMs: 1 + Math.floor(rnd() * 20) });
        else if (r < 0.7) l.send(rnd() < 0.5 ? 'DOWN' : 'UP', facts);
        else l.send('WORK', facts);
        const at = `trial ${trial} step ${step}`;
        const value = l.value();
        const launched = l.launches.length - before;
        visited.add(value);
        expect(launched, at).toBeLessThanOrEqual(1);
        expect(l.launches.length - done, at).toBe(value === 'executing' || value === 'failing' ? 1 : 0);
        if (launched === 1) {
          // allowed by what the engine reported: the event's facts, or (the timer) the facts it had heard
          const { facts: heard } = l.actor.getSnapshot().context;
          expect(heard.mayLaunch || heard.atDeadline, at).toBe(true);
          expect(l.launches.at(-1), at).toBe(value === 'failing');
          if (r < 0.25) timerLaunches++;
        }
        // at rest the chart never sits on a decision it could take
        const { facts: now } = l.actor.getSnapshot().context;
        if (value === 'idle') expect(now.ready, at).toBe(false);
        if (value === 'collecting') expect(now.ready && !now.mayLaunch, at).toBe(true);
        if (value === 'down') expect(now.atDeadline, at).toBe(false);
      }
      l.actor.stop();
    }
    expect([...visited].sort()).toEqual(['collecting', 'down', 'executing', 'failing', 'idle']);
    expect(timerLaunches).toBeGreaterThan(0);
  });
});
