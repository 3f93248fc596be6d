// The engine's lane actor: idle / collecting a delayed batch / executing (it holds the batch in flight) / down, where batches fail.
import { assign, setup } from 'xstate';
import type { Batch } from '../engine/batch.ts';
import { flatLogic } from './flatLogic.ts';

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

export type SubServerState = 'idle' | 'collecting' | 'executing' | 'failing' | 'down';
type SubServerContext = { host: SubServerHost; batch: Batch | null };

export const subServerMachine = setup({
  types: { context: {} as SubServerContext, input: {} as { host: SubServerHost }, events: {} as SubServerEvent },
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
  context: ({ input }) => ({ host: input.host, batch: null }),
  initial: 'idle',
  // A batch starts and ends on transitions (launch, landed), never on entering or leaving a state:
  // executing and failing both hold one, and DOWN / UP move it between them without touching it.
  states: {
    idle: {
      on: {
        WORK: [{ target: 'executing', guard: 'mayLaunch', actions: 'launch' }, { target: 'collecting', guard: 'hasWork' }],
        GATE: [{ target: 'executing', guard: 'mayLaunch', actions: 'launch' }, { target: 'collecting', guard: 'hasWork' }],
        DOWN: 'down',
      },
    },
    // Entered only when a batch must wait (below threshold, or a barrier closed): the deadline
    // timer is armed just for those waits, not on every step.
    collecting: {
      always: [
        { target: 'idle', guard: 'noWork' },
        { target: 'executing', guard: 'mayLaunch', actions: 'launch' },
      ],
      after: { maxWait: { target: 'executing', guard: 'deadline', actions: 'launch' } },
      // Targetless: the event only makes the eventless transitions above look again. A new
      // schedule re-enters, so the deadline timer runs again with the deadline now in force.
      on: { WORK: {}, GATE: {}, SCHEDULE: { target: 'collecting', reenter: true }, DOWN: 'down' },
    },
    // One batch in flight, held in the context: the queue is looked at again when it returns.
    executing: {
      on: {
        BATCH_DONE: [
          { target: 'executing', guard: 'mayLaunch', actions: 'launch' },
          { target: 'collecting', guard: 'hasWork', actions: 'landed' },
          { target: 'idle', actions: 'landed' },
        ],
        DOWN: 'failing',
      },
    },
    // Down (the runner is gone or taken down) with a batch in flight: each batch launched from here
    // fails at once, so its requests fail, as soon as one could launch at all (the deadline's rule).
    failing: {
      on: {
        BATCH_DONE: [
          { target: 'failing', guard: 'deadline', actions: 'launch' },
          { target: 'down', actions: 'landed' },
        ],
        UP: 'executing',
      },
    },
    down: {
      on: {
        WORK: { target: 'failing', guard: 'deadline', actions: 'launch' },
        GATE: { target: 'failing', guard: 'deadline', actions: 'launch' },
        UP: 'idle',
      },
    },
  },
});

/** The lane actor's logic: the chart above, run by flatLogic (it steps once per batch, so it must be cheap). */
export const subServerLogic = flatLogic<SubServerContext, SubServerEvent, { host: SubServerHost }, SubServerState>(subServerMachine);
