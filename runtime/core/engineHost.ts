// One engine's host and loop, as vLLM v1's EngineCoreProc busy loop: take inputs → maybe launch a step → ship its outputs.
import { createActor, type Actor } from 'xstate';
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { OutputProcessor, type Decoder } from '../runner/outputProcessor.ts';
import { EngineGrammar } from '../grammar/engineGrammar.ts';
import { Engine, type EngineEnv } from './engine.ts';
import { checkEngine } from './invariants.ts';
import type { RequestCounters } from './localRequest.ts';
import type { Arrival, EngineEvent, EngineOutlet, EngineOutputs, EngineSettings, PeerLink } from '../../shared/protocol/engineProtocol.ts';
import { LaunchRule, subServerMachine, type LaneFacts, type SubServerEvent } from './subServerMachine.ts';

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/** The cascade rule: no engine of a thread launches while its outputs' cascade runs (the entry's answers, handoffs), so what it readies joins the next step. */
export class Cascade {
  private depth = 0;
  private readonly held = new Set<EngineHost>();

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

  wake(host: EngineHost): void {
    if (this.depth > 0) this.held.add(host);
    else host.wake();
  }
}

/** One engine with its clock, launch rule, peers and loop: every call of the entry or a peer runs as one of the loop's inputs; nothing else starts a step or sends anything out. */
export class EngineHost implements EngineEnv {
  readonly rule: LaunchRule;
  readonly retain: boolean;
  readonly output: OutputProcessor | undefined;
  readonly grammar: EngineGrammar;
  /** Where trace events go while something reads them (`settings.trace`, then the entry's `trace` messages); undefined: none are made. */
  trace: TraceSink | undefined;
  private readonly sink: TraceSink;
  readonly engine: Engine;
  /** The lane actor: its state is the lane's, its `after` delay the max-wait timer, its `launch` action the one place a step starts. */
  readonly actor: Actor<typeof subServerMachine>;
  /** Links to the peers this engine hands requests to directly; any other goes through the entry. */
  readonly peers = new Map<string, PeerLink>();
  private readonly tombstones = new Set<number>();
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
    this.rule = new LaunchRule(settings.mode);
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

  get held(): number {
    return this.engine.locals.size;
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

  /** The peer died: handoffs there go by the entry until it is back. Its link is dropped, not closed: what it sent before it died may still be queued on it. */
  peerLost(name: string): void {
    this.peers.delete(name);
    this.input(() => this.engine.peerLost(name));
  }

  /** `link` is the one handoffs to `name` take now (false: that peer died since, or was replaced). */
  linked(name: string, link: PeerLink): boolean {
    return this.peers.get(name) === link;
  }

  addPeer(name: string, link: PeerLink): void {
    this.peers.get(name)?.close();
    this.peers.set(name, link);
  }

  arrive(arrivals: readonly Arrival[]): void {
    this.input(() => {
      for (const a of arrivals) if (!this.tombstones.has(a.spec.serial)) this.engine.arrive(a);
    });
  }

  deferArrival(ready: Promise<unknown>, a: Arrival): void {
    void ready.then(() => this.arrive([a]));
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

  setSchedule(threshold: number, maxWaitMs: number): void {
    this.input(() => {
      this.engine.threshold = threshold;
      this.actor.send({ type: 'SCHEDULE', lane: this.facts(), maxWaitMs });
    });
  }

  /** The entry's round lets this engine launch one step. */
  allow(): void {
    this.input(() => {
      this.rule.allow();
      this.look();
    });
  }

  setTracing(on: boolean): void {
    this.trace = on ? this.sink : undefined;
  }

  setDown(down: boolean): void {
    this.input(() => this.tell(down ? 'DOWN' : 'UP'));
  }

  /** Fails every request this engine holds (their state here may be off); the engine serves on. */
  failHeld(error: Error): number {
    return this.input(() => this.engine.failAll(error));
  }

  /** The runner died with every cache: what this engine held fails, and it refuses work until a runner is put in place. */
  runnerLost(error: Error): number {
    return this.input(() => {
      this.tell('DOWN');
      return this.engine.failAll(error);
    });
  }

  replaceRunner(runner: ModelRunner): void {
    this.input(() => {
      runner.useClock?.(this.clock);
      this.engine.runner = runner;
      this.tell('UP');
    });
  }

  dispose(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    this.actor.stop();
    // the runner outlives this engine: a `begin` that replaces it starts an empty prefix cache, so the old one's KV must go
    this.engine.queues.prefix?.clear();
  }

  // --- 2. maybe launch a step: the lane actor launches on a transition whose guard reads these facts ---

  private facts(): LaneFacts {
    const e = this.engine;
    const ready = e.readyCount > 0;
    return { ready, mayLaunch: this.rule.mayLaunch(e), atDeadline: ready && this.rule.mayLaunch(e, true) };
  }

  private tell(type: Exclude<SubServerEvent['type'], 'SCHEDULE'>): void {
    this.actor.send({ type, lane: this.facts() });
  }

  /** WORK, unless a step is in flight (its return looks) or nothing changed: at rest the actor's context is the lane as it is. */
  private look(): void {
    if (this.executing) return;
    const heard = this.actor.getSnapshot().context.lane;
    const now = this.facts();
    if (now.ready !== heard.ready || now.mayLaunch !== heard.mayLaunch || now.atDeadline !== heard.atDeadline) this.actor.send({ type: 'WORK', lane: now });
  }

  /** The lane actor's launch action: a step starts; its outputs, as data, ship when the runner answers. */
  private launch(down: boolean): void {
    this.rule.launched();
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

  /** Handoffs one message per peer, one report to the entry, one WORK if the lane changed; an entry in this thread hears the report before the lane actor. */
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
