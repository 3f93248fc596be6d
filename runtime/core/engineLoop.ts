// One engine's loop, as vLLM v1's EngineCoreProc busy loop: take inputs → maybe launch a step → ship its outputs; the engine actor's chart.
import { assign, createActor, setup, type Actor } from 'xstate';
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import { EngineGrammar } from '../grammar/engineGrammar.ts';
import { Engine, type EngineEnv } from './engine.ts';
import { checkEngine } from './invariants.ts';
import { OutputProcessor, type RequestCounters } from './localRequest.ts';
import type { Arrival, EngineEvent, EngineOutlet, EngineOutputs, EngineSettings, PeerLink } from '../../shared/protocol/engineProtocol.ts';
import { baselineLaunch, type BaselineLaunch } from './servingPolicy.ts';

/** What the guards read about the engine, sent with each event: requests are ready; the launch rule lets a batch start now; or once the max-wait deadline passed. */
export interface LaunchFacts {
  readonly ready: boolean;
  readonly mayLaunch: boolean;
  readonly atDeadline: boolean;
}

export const NO_WORK: LaunchFacts = Object.freeze({ ready: false, mayLaunch: false, atDeadline: false });

export type SubServerEvent =
  | { type: 'WORK'; facts: LaunchFacts } // the engine's queue changed: requests readied or gone, a sync round let it launch
  | { type: 'SCHEDULE'; facts: LaunchFacts; maxWaitMs: number } // the threshold or the max-wait deadline changed
  | { type: 'BATCH_DONE'; facts: LaunchFacts } // the batch in flight returned and its results are applied
  | { type: 'DOWN'; facts: LaunchFacts } // the runner is gone or taken down: steps fail at once
  | { type: 'UP'; facts: LaunchFacts }; // a runner is in place again

type SubServerContext = { facts: LaunchFacts; maxWaitMs: number };

/** The facts as the event reports them (guards run before `note`); the deadline's delayed event reports none: the facts last noted. */
const factsOf = ({ context, event }: { context: SubServerContext; event: SubServerEvent }): LaunchFacts => ('facts' in event ? event.facts : context.facts);

const LAUNCH = { type: 'launch', params: { down: false } } as const;
const LAUNCH_DOWN = { type: 'launch', params: { down: true } } as const;

/** The engine actor's chart: `launch`, provided by the host below, is the one effect; every event carries the launch facts, which `note` keeps. */
export const subServerMachine = setup({
  types: { context: {} as SubServerContext, input: {} as { maxWaitMs: number }, events: {} as SubServerEvent },
  guards: {
    hasWork: (args) => factsOf(args).ready,
    noWork: (args) => !factsOf(args).ready,
    mayLaunch: (args) => factsOf(args).mayLaunch,
    deadline: (args) => factsOf(args).atDeadline,
  },
  actions: {
    note: assign({ facts: ({ event }) => event.facts }),
    schedule: assign(({ event, context }) => ({ facts: event.facts, maxWaitMs: event.type === 'SCHEDULE' ? event.maxWaitMs : context.maxWaitMs })),
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
  context: ({ input }) => ({ facts: NO_WORK, maxWaitMs: input.maxWaitMs }),
  initial: 'idle',
  // Heard in any state that does not take the event itself: the facts are noted, and deciding states look again.
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

/** When a step may start (`late`: past the max-wait deadline): async-delayed, the product, at `threshold` ready requests or any once late; a baseline by its own rule. */
export function mayLaunch(readyCount: number, threshold: number, late: boolean, baseline?: BaselineLaunch): boolean {
  if (readyCount === 0) return false;
  return baseline ? baseline.mayLaunch() : late || readyCount >= threshold;
}

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/** The cascade rule: no engine of a thread launches while its outputs' cascade runs (the entry's answers, handoffs), so what it readies joins the next step. */
export class Cascade {
  private depth = 0;
  private readonly held = new Set<EngineLoop>();

  enter(): void {
    this.depth++;
  }

  leave(): void {
    if (--this.depth > 0) return;
    for (const host of this.held) {
      this.held.delete(host);
      host.wake();
    }
  }

  run<T>(fn: () => T): T {
    this.enter();
    try {
      return fn();
    } finally {
      this.leave();
    }
  }

  get idle(): boolean {
    return this.depth === 0;
  }

  wake(host: EngineLoop): void {
    if (this.depth > 0) this.held.add(host);
    else host.wake();
  }
}

/** One engine with its clock, launch rule, peers and loop: every call of the entry or a peer runs as one of the loop's inputs; nothing else starts a step or sends anything out. Its control calls (schedule, grants, failures, peers) are EngineHost's. */
export class EngineLoop implements EngineEnv {
  /** The launch rule of a baseline mode (servingPolicy.ts); undefined: async-delayed's, `mayLaunch`. */
  protected readonly baseline: BaselineLaunch | undefined;
  readonly retain: boolean;
  readonly output: OutputProcessor | undefined;
  readonly grammar: EngineGrammar;
  /** Where trace events go while something reads them (`settings.trace`, then the entry's `trace` messages); undefined: none are made. */
  trace: TraceSink | undefined;
  protected readonly sink: TraceSink;
  readonly engine: Engine;
  /** The engine actor: its state is the engine's, its `after` delay the max-wait timer, its `launch` action the one place a step starts. */
  readonly actor: Actor<typeof subServerMachine>;
  /** Links to the peers this engine hands requests to directly; any other goes through the entry. */
  readonly peers = new Map<string, PeerLink>();
  protected readonly tombstones = new Set<number>();
  /** Trace events made since the last report, for an entry across a port (one in this process takes them at once). */
  private traced: TraceEvent[] = [];
  private lastLane = '';
  private lastQueue = 0;

  constructor(
    readonly outlet: EngineOutlet,
    readonly settings: EngineSettings,
    runner: ModelRunner,
    decoder: Decoder | undefined,
    readonly clock: Clock,
    /** Where trace events go at once (an engine in the entry's process); absent: they travel in the report, when `settings.trace`. */
    traceSink?: TraceSink,
    /** Shared by the engines of one thread (the entry's); an engine alone in its thread has its own. */
    readonly cascade = new Cascade(),
    /** A batch's outputs and everything they set off are over, and nothing else runs (the entry's debug checks). */
    readonly settled?: () => void,
  ) {
    this.baseline = baselineLaunch(settings.mode);
    // false (standard serving): a request's KV goes from an engine it leaves, and each handoff carries the whole context
    this.retain = settings.retainState;
    this.output = decoder && new OutputProcessor(decoder);
    this.grammar = new EngineGrammar(decoder);
    this.sink = traceSink ?? { emit: (e) => this.traced.push(e) };
    this.trace = settings.trace ? this.sink : undefined;
    runner.useClock?.(clock);
    this.engine = new Engine(settings, runner, this);
    const machine = subServerMachine.provide({ actions: { launch: (_, { down }) => this.launch(down) } });
    this.actor = createActor(machine, { input: { maxWaitMs: settings.maxWaitMs }, clock }).start();
  }

  get executing(): boolean {
    const state = this.actor.getSnapshot().value;
    return state === 'executing' || state === 'failing';
  }

  /** Steps fail at once until the runner is replaced. */
  get down(): boolean {
    const state = this.actor.getSnapshot().value;
    return state === 'down' || state === 'failing';
  }

  // --- 1. take inputs: the calls of the entry and peers ---

  input<T>(fn: () => T): T {
    return this.cascade.run(() => {
      const out = fn();
      this.ship(this.engine.take(), 0);
      return out;
    });
  }

  arrive(arrivals: readonly Arrival[]): void {
    this.input(() => {
      for (const a of arrivals) if (!this.tombstones.has(a.spec.serial)) this.engine.arrive(a);
    });
  }

  release(id: string, serial: number, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    return this.input(() => {
      const local = this.engine.locals.get(id);
      if (local && local.spec.serial === serial) return this.engine.release(local.spec, status);
      this.tombstones.add(serial);
      if (this.tombstones.size > TOMBSTONES) this.tombstones.delete(this.tombstones.values().next().value!);
      return null;
    });
  }

  // --- 2. maybe launch a step: the engine actor launches on a transition whose guard reads these facts ---

  protected facts(): LaunchFacts {
    const { readyCount, threshold } = this.engine;
    const { baseline } = this;
    return {
      ready: readyCount > 0,
      mayLaunch: mayLaunch(readyCount, threshold, false, baseline),
      atDeadline: mayLaunch(readyCount, threshold, true, baseline),
    };
  }

  protected tell(type: Exclude<SubServerEvent['type'], 'SCHEDULE'>): void {
    this.actor.send({ type, facts: this.facts() });
  }

  /** WORK, unless a step is in flight (its return looks) or nothing changed: at rest the actor's context holds the facts as they are. */
  protected look(): void {
    if (this.executing) return;
    const heard = this.actor.getSnapshot().context.facts;
    const now = this.facts();
    if (now.ready !== heard.ready || now.mayLaunch !== heard.mayLaunch || now.atDeadline !== heard.atDeadline) this.actor.send({ type: 'WORK', facts: now });
  }

  /** The engine actor's launch action: a step starts; its outputs, as data, ship when the runner answers. */
  private launch(down: boolean): void {
    this.baseline?.launched();
    const e = this.engine;
    const { batch, result } = e.step(down);
    result.then(
      (o) => this.landed(e.apply(batch, o)),
      (err: Error) => this.landed(e.fail(batch, err)),
    );
  }

  // --- 3. ship its outputs ---

  private landed(out: EngineOutputs): void {
    this.cascade.run(() => {
      this.tell('BATCH_DONE');
      this.ship(out, 1);
    });
    if (this.cascade.idle) this.settled?.();
    // an invariant broken here is a bug: it kills the thread (or process), which the entry reports
    if (this.settings.checkInvariants) checkEngine(this.engine);
  }

  /** Handoffs one message per peer, one report to the entry, one WORK if the facts changed; an entry in this thread hears the report before the engine actor. */
  private ship(out: EngineOutputs, returned: number): void {
    if (out.sent.length > 0) this.sendHandoffs(out.sent);
    if (this.outlet.inProcess) {
      this.report(out.events, returned);
      this.cascade.wake(this);
    } else {
      this.wake();
      this.report(out.events, returned);
    }
  }

  private sendHandoffs(sent: EngineOutputs['sent']): void {
    const byPeer = new Map<string, Arrival[]>();
    for (const { to, arrival } of sent) byPeer.set(to, [...(byPeer.get(to) ?? []), arrival]);
    for (const [name, arrivals] of byPeer) {
      const peer = this.peers.get(name);
      if (peer) peer.arrive(arrivals);
      else this.outlet.viaEntry(name, arrivals);
    }
  }

  /** The engine actor hears what changed while no step is in flight (a step's return looks at the queue itself). */
  wake(): void {
    const e = this.engine;
    if (!this.executing && e.readyCount > 0) this.queueLength(e.readyCount);
    this.look();
    // a queue that emptied says so (a launch took it, or a landed step did): a reader holds the last length it heard
    if (e.readyCount === 0 && this.lastQueue > 0) this.queueLength(0);
  }

  private queueLength(length: number): void {
    this.lastQueue = length;
    this.trace?.emit({ type: 'queue', t: this.clock.now(), model: this.engine.name, length });
  }

  private report(events: EngineEvent[], returned: number): void {
    const { outlet } = this;
    // an entry in this thread reads the lane itself; one across a port hears it when it changed
    const lane = outlet.inProcess ? undefined : this.engine.laneStats();
    const key = lane ? `${lane.ready}/${lane.executing}/${lane.waitingAdmission}/${lane.pendingReturn}/${lane.kvBytes}` : '';
    const same = key === this.lastLane;
    this.lastLane = key;
    if (same && events.length === 0 && this.traced.length === 0 && returned === 0) return;
    // taken before the report goes: the entry may answer at once (a release), which ships again
    const report = { events, trace: this.traced, lane, returned };
    if (this.traced.length > 0) this.traced = [];
    outlet.report(report);
  }
}
