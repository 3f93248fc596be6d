// The sub-server actor: idle / collecting a delayed batch / executing, with threshold and max-wait deadline.
import { setup } from 'xstate';

/** What the sub-server actor asks of the sub-server it drives; the scheduler policy answers the guards. */
export interface SubServerHost {
  /** Requests are ready to run here. */
  hasWork(): boolean;
  /** The scheduling policy lets a batch start now (threshold reached, barrier open). */
  mayLaunch(): boolean;
  /** The max-wait deadline passed: may a batch start below threshold? (Sync modes keep their barrier.) */
  mayLaunchAtDeadline(): boolean;
  /** Runs one batched step; its completion comes back as BATCH_DONE. */
  step(): void;
  /** Max wait in clock ms; Infinity = none. */
  maxWaitMs(): number;
}

export type SubServerEvent =
  | { type: 'WORK' } // new ready requests (sent once per wave, not per request)
  | { type: 'GATE' } // a sync barrier opened
  | { type: 'SCHEDULE' } // the threshold or the max-wait deadline changed
  | { type: 'BATCH_DONE' };

export const subServerMachine = setup({
  types: { context: {} as { host: SubServerHost }, input: {} as { host: SubServerHost }, events: {} as SubServerEvent },
  guards: {
    hasWork: ({ context }) => context.host.hasWork(),
    noWork: ({ context }) => !context.host.hasWork(),
    mayLaunch: ({ context }) => context.host.mayLaunch(),
    deadline: ({ context }) => context.host.hasWork() && context.host.mayLaunchAtDeadline(),
  },
  actions: {
    launch: ({ context }) => context.host.step(),
  },
  delays: {
    maxWait: ({ context }) => context.host.maxWaitMs(),
  },
}).createMachine({
  id: 'subServer',
  context: ({ input }) => ({ host: input.host }),
  initial: 'idle',
  states: {
    idle: {
      on: {
        WORK: [{ target: 'executing', guard: 'mayLaunch' }, { target: 'collecting', guard: 'hasWork' }],
        GATE: [{ target: 'executing', guard: 'mayLaunch' }, { target: 'collecting', guard: 'hasWork' }],
      },
    },
    // Entered only when a batch must wait (below threshold, or a barrier closed): the deadline
    // timer is armed just for those waits, not on every step.
    collecting: {
      always: [
        { target: 'idle', guard: 'noWork' },
        { target: 'executing', guard: 'mayLaunch' },
      ],
      after: { maxWait: { target: 'executing', guard: 'deadline' } },
      // Targetless: the event only makes the eventless transitions above look again. A new
      // schedule re-enters, so the deadline timer runs again with the deadline now in force.
      on: { WORK: {}, GATE: {}, SCHEDULE: { target: 'collecting', reenter: true } },
    },
    // One batch in flight: the queue is looked at again when it returns.
    executing: {
      entry: 'launch',
      on: {
        BATCH_DONE: [
          { target: 'executing', reenter: true, guard: 'mayLaunch' },
          { target: 'collecting', guard: 'hasWork' },
          { target: 'idle' },
        ],
      },
    },
  },
});
