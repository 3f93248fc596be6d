// The engine's lane actor and launch rule: idle / collecting a delayed batch / executing a batch / down, where batches fail; when a step may start.
import { assign, setup } from 'xstate';
import type { EngineSettings } from '../../shared/protocol/engineProtocol.ts';

/** What the guards read about the lane, sent with each event: requests are ready; the launch rule lets a batch start now; or once the max-wait deadline passed. */
export interface LaneFacts {
  readonly ready: boolean;
  readonly mayLaunch: boolean;
  readonly atDeadline: boolean;
}

export const NO_WORK: LaneFacts = Object.freeze({ ready: false, mayLaunch: false, atDeadline: false });

export type SubServerEvent =
  | { type: 'WORK'; lane: LaneFacts } // the lane changed: requests readied or gone, a sync round let it launch
  | { type: 'SCHEDULE'; lane: LaneFacts; maxWaitMs: number } // the threshold or the max-wait deadline changed
  | { type: 'BATCH_DONE'; lane: LaneFacts } // the batch in flight returned and its results are applied
  | { type: 'DOWN'; lane: LaneFacts } // the runner is gone or taken down: steps fail at once
  | { type: 'UP'; lane: LaneFacts }; // a runner is in place again

type SubServerContext = { lane: LaneFacts; maxWaitMs: number };

/** The lane as the event reports it (guards run before `note`); the deadline's delayed event reports none: the lane last noted. */
const laneOf = ({ context, event }: { context: SubServerContext; event: SubServerEvent }): LaneFacts => ('lane' in event ? event.lane : context.lane);

const LAUNCH = { type: 'launch', params: { down: false } } as const;
const LAUNCH_DOWN = { type: 'launch', params: { down: true } } as const;

/** The lane's chart: `launch`, provided by the engine host, is the one effect; every event carries the lane's facts, which `note` keeps. */
export const subServerMachine = setup({
  types: { context: {} as SubServerContext, input: {} as { maxWaitMs: number }, events: {} as SubServerEvent },
  guards: {
    hasWork: (args) => laneOf(args).ready,
    noWork: (args) => !laneOf(args).ready,
    mayLaunch: (args) => laneOf(args).mayLaunch,
    deadline: (args) => laneOf(args).atDeadline,
  },
  actions: {
    note: assign({ lane: ({ event }) => event.lane }),
    schedule: assign(({ event, context }) => ({ lane: event.lane, maxWaitMs: event.type === 'SCHEDULE' ? event.maxWaitMs : context.maxWaitMs })),
    launch: (_, _params: { down: boolean }) => {
      throw new Error('subServerMachine: the engine provides the launch action (machine.provide({ actions: { launch } }))');
    },
  },
  delays: {
    // Infinity: no deadline
    maxWait: ({ context }) => context.maxWaitMs,
  },
}).createMachine({
  id: 'engine',
  context: ({ input }) => ({ lane: NO_WORK, maxWaitMs: input.maxWaitMs }),
  initial: 'idle',
  // Heard in any state that does not take the event itself: the lane is noted, and deciding states look again.
  on: { WORK: { actions: 'note' }, SCHEDULE: { actions: 'schedule' }, BATCH_DONE: { actions: 'note' }, DOWN: { actions: 'note' }, UP: { actions: 'note' } },
  // A batch starts on a transition, never on entering a state: DOWN / UP move between executing and failing without touching it.
  states: {
    idle: {
      always: [
        { target: 'executing', guard: 'mayLaunch', actions: LAUNCH },
        { target: 'collecting', guard: 'hasWork' },
      ],
      on: { DOWN: { target: 'down', actions: 'note' } },
    },
    // Entered only when a batch must wait (below threshold, a sync round closed): the deadline timer is armed for those waits only.
    collecting: {
      always: [
        { target: 'idle', guard: 'noWork' },
        { target: 'executing', guard: 'mayLaunch', actions: LAUNCH },
      ],
      after: { maxWait: { target: 'executing', guard: 'deadline', actions: LAUNCH } },
      // a new schedule re-enters, so the timer runs again with the deadline now in force
      on: { SCHEDULE: { target: 'collecting', reenter: true, actions: 'schedule' }, DOWN: { target: 'down', actions: 'note' } },
    },
    executing: {
      on: {
        BATCH_DONE: [
          { target: 'executing', guard: 'mayLaunch', actions: ['note', LAUNCH] },
          { target: 'collecting', guard: 'hasWork', actions: 'note' },
          { target: 'idle', actions: 'note' },
        ],
        DOWN: { target: 'failing', actions: 'note' },
      },
    },
    // Down with a batch in flight.
    failing: {
      on: { BATCH_DONE: { target: 'down', actions: 'note' }, UP: { target: 'executing', actions: 'note' } },
    },
    // Each batch launched from here fails at once, as soon as one could launch at all (the deadline's rule).
    down: {
      always: { target: 'failing', guard: 'deadline', actions: LAUNCH_DOWN },
      on: { UP: { target: 'idle', actions: 'note' } },
    },
  },
});

/**
 * When a step may start (`late`: past the max-wait deadline). Async-delayed, the product, waits for `threshold` ready requests or the
 * deadline; async-immediate launches on any; the sync baselines launch once per round the entry's `Rounds` allow (servingPolicy.ts).
 */
export class LaunchRule {
  private allowed = false;

  constructor(private readonly mode: EngineSettings['mode']) {}

  mayLaunch(lane: { readonly readyCount: number; readonly threshold: number }, late = false): boolean {
    if (lane.readyCount === 0) return false;
    if (this.mode === 'async-immediate') return true;
    if (this.mode === 'async-delayed') return late || lane.readyCount >= lane.threshold;
    return this.allowed;
  }

  launched(): void {
    this.allowed = false;
  }

  allow(): void {
    this.allowed = true;
  }
}
