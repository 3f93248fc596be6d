// The engine's lane actor: idle / collecting a delayed batch / executing (it holds the batch in flight), beside its runner up or down.
import { assign, setup } from 'xstate';
import type { Batch } from '../engine/batch.ts';

/** What the lane actor asks of the engine it drives; the scheduler policy answers the guards. */
export interface SubServerHost {
  /** Requests are ready to run here. */
  hasWork(): boolean;
  /** The scheduling policy lets a batch start now (threshold reached, barrier open). */
  mayLaunch(): boolean;
  /** The max-wait deadline passed: may a batch start below threshold? (Sync modes keep their barrier.) */
  mayLaunchAtDeadline(): boolean;
  /** Launches one batched step; its return comes back as BATCH_DONE. */
  launch(): Batch;
  /** Max wait in clock ms; Infinity = none. */
  maxWaitMs(): number;
}

export type SubServerEvent =
  | { type: 'WORK' } // ready requests (sent once per cascade, not per request)
  | { type: 'GATE' } // a sync barrier opened
  | { type: 'SCHEDULE' } // the threshold or the max-wait deadline changed
  | { type: 'BATCH_DONE' } // the batch in flight returned and its results are applied
  | { type: 'DOWN' } // the runner is gone or taken down: steps fail at once
  | { type: 'UP' }; // a runner is in place again

export const subServerMachine = setup({
  types: { context: {} as { host: SubServerHost; batch: Batch | null }, input: {} as { host: SubServerHost }, events: {} as SubServerEvent },
  guards: {
    hasWork: ({ context }) => context.host.hasWork(),
    noWork: ({ context }) => !context.host.hasWork(),
    mayLaunch: ({ context }) => context.host.mayLaunch(),
    deadline: ({ context }) => context.host.hasWork() && context.host.mayLaunchAtDeadline(),
  },
  actions: {
    launch: assign({ batch: ({ context }) => context.host.launch() }),
    landed: assign({ batch: null }),
  },
  delays: {
    maxWait: ({ context }) => context.host.maxWaitMs(),
  },
}).createMachine({
  id: 'engine',
  type: 'parallel',
  context: ({ input }) => ({ host: input.host, batch: null }),
  states: {
    lane: {
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
        // One batch in flight, held in the context: the queue is looked at again when it returns.
        executing: {
          entry: 'launch',
          exit: 'landed',
          on: {
            BATCH_DONE: [
              { target: 'executing', reenter: true, guard: 'mayLaunch' },
              { target: 'collecting', guard: 'hasWork' },
              { target: 'idle' },
            ],
          },
        },
      },
    },
    // Down: batches still launch and fail at once (their requests fail), until a runner is in place.
    runner: {
      initial: 'up',
      states: {
        up: { on: { DOWN: 'down' } },
        down: { on: { UP: 'up' } },
      },
    },
  },
});
