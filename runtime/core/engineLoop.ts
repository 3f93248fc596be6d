// One engine's loop, as vLLM v1's EngineCoreProc busy loop: take inputs → maybe launch a step → ship its outputs.
import { createActor, type Actor } from 'xstate';
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { Engine } from './engine.ts';
import { checkEngine } from './invariants.ts';
import type { Arrival, EngineEvent, EngineOutlet, EngineOutputs, EngineSettings, PeerLink } from './messages.ts';
import type { ServingPolicy } from './servingPolicy.ts';
import { subServerMachine, type LaneFacts, type SubServerEvent } from './subServerMachine.ts';

/** The cascade rule: no engine of a thread launches while its outputs' cascade runs (the entry's answers, handoffs), so what it readies joins the next step. */
export class Cascade {
  private depth = 0;
  private readonly held = new Set<EngineLoop>();

  enter(): void {
    this.depth++;
  }

  leave(): void {
    if (--this.depth > 0) return;
    for (const loop of this.held) {
      this.held.delete(loop);
      loop.wake();
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

  wake(loop: EngineLoop): void {
    if (this.depth > 0) this.held.add(loop);
    else loop.wake();
  }
}

/** What the loop reads and ships through: its host (EngineHost). */
export interface LoopPorts {
  readonly clock: Clock;
  readonly settings: Pick<EngineSettings, 'maxWaitMs' | 'checkInvariants'>;
  readonly policy: Pick<ServingPolicy, 'launch'>;
  readonly outlet: EngineOutlet;
  /** Links to the peers this engine hands requests to directly; any other goes through the entry. */
  readonly peers: ReadonlyMap<string, PeerLink>;
  readonly trace: TraceSink | undefined;
  readonly cascade: Cascade;
  readonly settled?: () => void;
}

/** One engine's loop: nothing else starts a step or sends anything out. */
export class EngineLoop {
  /** The lane actor: its state is the lane's, its `after` delay the max-wait timer, its `launch` action the one place a step starts. */
  readonly actor: Actor<typeof subServerMachine>;
  /** Trace events made since the last report, for an entry across a port (one in this process takes them at once). */
  traced: TraceEvent[] = [];
  private lastLane = '';
  private lastQueue = 0;

  constructor(
    private readonly engine: Engine,
    private readonly host: LoopPorts,
  ) {
    const machine = subServerMachine.provide({ actions: { launch: (_, { down }) => this.launch(down) } });
    this.actor = createActor(machine, { input: { maxWaitMs: host.settings.maxWaitMs }, clock: host.clock }).start();
  }

  // --- 1. take inputs ---

  input<T>(fn: () => T): T {
    return this.host.cascade.run(() => {
      const out = fn();
      this.ship(this.engine.take(), 0);
      return out;
    });
  }

  // --- 2. maybe launch a step: the lane actor launches on a transition whose guard reads these facts ---

  private facts(): LaneFacts {
    const e = this.engine;
    const rule = this.host.policy.launch;
    const ready = e.readyCount > 0;
    return { ready, mayLaunch: rule.mayLaunch(e), atDeadline: ready && rule.mayLaunchLate(e) };
  }

  tell(type: Exclude<SubServerEvent['type'], 'SCHEDULE'>): void {
    this.actor.send({ type, lane: this.facts() });
  }

  /** WORK, unless a step is in flight (its return looks) or nothing changed: at rest the actor's context is the lane as it is. */
  look(): void {
    if (this.executing) return;
    const heard = this.actor.getSnapshot().context.lane;
    const now = this.facts();
    if (now.ready !== heard.ready || now.mayLaunch !== heard.mayLaunch || now.atDeadline !== heard.atDeadline) this.actor.send({ type: 'WORK', lane: now });
  }

  /** The lane actor's launch action: a step starts; its outputs, as data, ship when the runner answers. */
  private launch(down: boolean): void {
    this.host.policy.launch.launched();
    const e = this.engine;
    const { batch, result } = e.step(down);
    result.then(
      (o) => this.landed(e.apply(batch, o)),
      (err: Error) => this.landed(e.fail(batch, err)),
    );
  }

  schedule(threshold: number, maxWaitMs: number): void {
    this.input(() => {
      this.engine.threshold = threshold;
      this.actor.send({ type: 'SCHEDULE', lane: this.facts(), maxWaitMs });
    });
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

  // --- 3. ship its outputs ---

  private landed(out: EngineOutputs): void {
    const { cascade } = this.host;
    cascade.run(() => {
      this.tell('BATCH_DONE');
      this.ship(out, 1);
    });
    if (cascade.idle) this.host.settled?.();
    // an invariant broken here is a bug: it kills the thread (or process), which the entry reports
    if (this.host.settings.checkInvariants) checkEngine(this.engine);
  }

  /** Handoffs one message per peer, one report to the entry, one WORK if the lane changed; an entry in this thread hears the report before the lane actor. */
  private ship(out: EngineOutputs, returned: number): void {
    if (out.sent.length > 0) this.sendHandoffs(out.sent);
    if (this.host.outlet.inProcess) {
      this.report(out.events, returned);
      this.host.cascade.wake(this);
    } else {
      this.wake();
      this.report(out.events, returned);
    }
  }

  private sendHandoffs(sent: EngineOutputs['sent']): void {
    const byPeer = new Map<string, Arrival[]>();
    for (const { to, arrival } of sent) byPeer.set(to, [...(byPeer.get(to) ?? []), arrival]);
    for (const [name, arrivals] of byPeer) {
      const peer = this.host.peers.get(name);
      if (peer) peer.arrive(arrivals);
      else this.host.outlet.viaEntry(name, arrivals);
    }
  }

  /** The lane actor hears what changed while no step is in flight (a step's return looks at the queue itself). */
  wake(): void {
    const e = this.engine;
    if (!this.executing && e.readyCount > 0) this.queueLength(e.readyCount);
    this.look();
    // a queue that emptied says so (a launch took it, or a landed step did): a reader holds the last length it heard
    if (e.readyCount === 0 && this.lastQueue > 0) this.queueLength(0);
  }

  private queueLength(length: number): void {
    this.lastQueue = length;
    this.host.trace?.emit({ type: 'queue', t: this.host.clock.now(), model: this.engine.name, length });
  }

  private report(events: EngineEvent[], returned: number): void {
    const { outlet } = this.host;
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
