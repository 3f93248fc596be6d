// The lane actor's flat logic must behave exactly as its statechart run by XState: same states, same launches, same timers.
import { describe, expect, it } from 'vitest';
import { createActor, setup, assign, SimulatedClock } from 'xstate';
import { subServerLogic, subServerMachine, type SubServerEvent, type SubServerHost } from '../../runtime/actors/subServerMachine.ts';
import { flatLogic, UnsupportedChartError } from '../../runtime/actors/flatLogic.ts';
import type { Batch } from '../../runtime/engine/batch.ts';
import { mulberry32 as draws } from '../../shared/rng.ts';

/** A host whose guards read plain flags the test sets, so both actors see the same answers however often they ask. */
class FlagHost implements SubServerHost {
  work = false;
  may = false;
  atDeadline = false;
  wait = 10;
  launches = 0;
  hasWork = () => this.work;
  mayLaunch = () => this.may;
  mayLaunchAtDeadline = () => this.atDeadline;
  maxWaitMs = () => this.wait;
  launch = () => ({ id: ++this.launches }) as unknown as Batch;
}

const EVENTS: SubServerEvent['type'][] = ['WORK', 'GATE', 'SCHEDULE', 'BATCH_DONE', 'DOWN', 'UP'];

describe('lane actor logic (flatLogic of subServerMachine)', () => {
  it('agrees with the machine over random event sequences, guard answers and clock advances', () => {
    const visited = new Set<string>();
    let timerFires = 0;
    for (let trial = 0; trial < 300; trial++) {
      const rnd = draws(trial + 1);
      const hosts = [new FlagHost(), new FlagHost()];
      const clocks = [new SimulatedClock(), new SimulatedClock()];
      const machine = createActor(subServerMachine, { input: { host: hosts[0] }, clock: clocks[0] });
      const flat = createActor(subServerLogic, { input: { host: hosts[1] }, clock: clocks[1] });
      machine.start();
      flat.start();
      for (let step = 0; step < 40; step++) {
        const flags = { work: rnd() < 0.6, may: rnd() < 0.5, atDeadline: rnd() < 0.5, wait: 1 + Math.floor(rnd() * 20) };
        for (const h of hosts) Object.assign(h, flags);
        const before = String(machine.getSnapshot().value);
        if (rnd() < 0.3) {
          const ms = Math.floor(rnd() * 25);
          const launched = hosts[0].launches;
          for (const c of clocks) c.increment(ms);
          if (hosts[0].launches > launched && before === 'collecting') timerFires++;
        } else {
          const event = { type: EVENTS[Math.floor(rnd() * EVENTS.length)] } as SubServerEvent;
          machine.send(event);
          flat.send(event);
        }
        const [m, f] = [machine.getSnapshot(), flat.getSnapshot()];
        visited.add(String(m.value));
        const at = `trial ${trial} step ${step}`;
        expect(f.value, at).toBe(m.value);
        expect(hosts[1].launches, at).toBe(hosts[0].launches);
        expect((f.context.batch as { id: number } | null)?.id ?? null, at).toBe((m.context.batch as { id: number } | null)?.id ?? null);
      }
      machine.stop();
      flat.stop();
    }
    expect([...visited].sort()).toEqual(['collecting', 'down', 'executing', 'failing', 'idle']);
    // the deadline timer itself launched batches, not only events
    expect(timerFires).toBeGreaterThan(0);
  });

  it('keeps its snapshot when no transition is taken (nothing to allocate)', () => {
    const host = new FlagHost();
    const a = createActor(subServerLogic, { input: { host } });
    a.start();
    const s0 = a.getSnapshot();
    a.send({ type: 'BATCH_DONE' });
    expect(a.getSnapshot()).toBe(s0);
    host.work = true;
    host.may = true;
    a.send({ type: 'WORK' });
    expect(a.getSnapshot().value).toBe('executing');
    expect(host.launches).toBe(1);
  });

  it('refuses charts it cannot run', () => {
    const nested = setup({}).createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } });
    expect(() => flatLogic(nested)).toThrow(UnsupportedChartError);
    const withEntry = setup({ actions: { log: () => {} } }).createMachine({ initial: 'a', states: { a: { entry: 'log' } } });
    expect(() => flatLogic(withEntry)).toThrow(UnsupportedChartError);
    const notAssign = setup({ actions: { log: () => {} } }).createMachine({ initial: 'a', states: { a: { on: { GO: { target: 'b', actions: 'log' } } }, b: {} } });
    expect(() => flatLogic(notAssign)).toThrow(UnsupportedChartError);
    const ok = setup({ types: { context: {} as { n: number } } }).createMachine({ context: { n: 0 }, initial: 'a', states: { a: { on: { GO: { target: 'a', actions: assign({ n: ({ context }) => context.n + 1 }) } } } } });
    const a = createActor(flatLogic<{ n: number }, { type: 'GO' }, undefined>(ok));
    a.start();
    a.send({ type: 'GO' });
    a.send({ type: 'GO' });
    expect(a.getSnapshot().context.n).toBe(2);
  });
});
