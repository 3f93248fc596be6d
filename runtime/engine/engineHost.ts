// The one engine host: serves one model's engine, whatever its placement; only the outlet it reports through differs.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { Engine } from './engine.ts';
import { checkEngine } from './invariants.ts';
import { OutputProcessor } from './outputProcessor.ts';
import { EngineGrammar } from '../grammar/engineGrammar.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';
import type { Arrival, EngineEvent, EngineOutlet, EngineOutputs, EngineSettings, PeerLink } from './messages.ts';
import type { RequestCounters } from './localRequest.ts';
import type { EngineEnv } from './engineEnv.ts';
import type { LaneStats } from './laneStats.ts';

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/**
 * Wake-ups held while a cascade of calls is still running among the engines of one thread (a
 * batch's results, the entry's answers to them, the handoffs they send): every engine launches
 * only when all of it is in, so a request the cascade readies joins the next batch, not the one after.
 */
export class WakeGate {
  private depth = 0;
  private readonly held = new Set<EngineHost>();

  enter(): void {
    this.depth++;
  }

  leave(): void {
    if (--this.depth > 0) return;
    for (const h of this.held) {
      this.held.delete(h);
      h.wake();
    }
  }

  /** No cascade running: the engines of this thread are all at rest. */
  get idle(): boolean {
    return this.depth === 0;
  }

  wake(h: EngineHost): void {
    if (this.depth > 0) this.held.add(h);
    else h.wake();
  }
}

/**
 * One engine with its clock, its share of the launch policy (a sync barrier is the entry's: it
 * grants launches with `gate`), and links to its peers. Whatever the engine produced — by a batch
 * landing, an arrival, a release — it hands over as data (`EngineOutputs`), and one loop here ships
 * it: the handoffs one message per peer, one report to the entry, one WORK when the lane changed.
 */
export class EngineHost implements EngineEnv {
  readonly policy: LaunchPolicy;
  readonly retainState: boolean;
  readonly output: OutputProcessor | undefined;
  readonly grammar: EngineGrammar;
  /** Where trace events go while something reads them (`settings.trace`, then the entry's `trace` messages); undefined: none are made. */
  trace: TraceSink | undefined;
  private readonly sink: TraceSink;
  readonly engine: Engine;
  private readonly peers = new Map<string, PeerLink>();
  private readonly tombstones = new Set<number>();
  private traced: TraceEvent[] = [];
  private batchSeq = 0;
  private lastLane = '';

  constructor(
    private readonly outlet: EngineOutlet,
    readonly settings: EngineSettings,
    runner: ModelRunner,
    /** The model's tokenizer, loaded beside it: requests that ask for text are detokenised here. */
    decoder: Decoder | undefined,
    readonly clock: Clock,
    /** Where trace events go at once (an engine in the entry's process); absent: they travel in the report, when `settings.trace`. */
    traceSink?: TraceSink,
    /** Shared by the engines of one thread (the entry's); an engine alone in its thread has its own. */
    private readonly wakes = new WakeGate(),
    /** A batch's outputs and everything they set off are over, and nothing else runs (the entry's debug checks). */
    private readonly settled?: () => void,
  ) {
    this.policy = new LaunchPolicy(settings.mode);
    this.output = decoder && new OutputProcessor(decoder);
    this.grammar = new EngineGrammar(decoder);
    this.retainState = settings.retainState;
    this.sink = traceSink ?? { emit: (e) => this.traced.push(e) };
    this.trace = settings.trace ? this.sink : undefined;
    const name = settings.models[settings.index];
    runner.useClock?.(clock);
    this.engine = new Engine(settings.index, { ...settings, name, runner }, this);
  }

  /** Requests this engine holds state for. */
  get held(): number {
    return this.engine.locals.size;
  }

  nextBatchId(): number {
    return ++this.batchSeq * this.settings.models.length + this.settings.index;
  }

  /** A batch landed: the lane actor looks at the queue again, then its outputs go out. */
  landed(out: EngineOutputs): void {
    this.wakes.enter();
    try {
      this.engine.tell('BATCH_DONE');
      this.ship(out, 1);
    } finally {
      this.wakes.leave();
    }
    if (this.wakes.idle) this.settled?.();
    // an invariant broken here is a bug: it kills the thread (or process), which the entry reports
    if (this.settings.checkInvariants) checkEngine(this.engine);
  }

  /** Runs one request of the entry or a peer, then ships what it produced. */
  private call<T>(fn: () => T): T {
    this.wakes.enter();
    try {
      const out = fn();
      this.ship(this.engine.take(), 0);
      return out;
    } finally {
      this.wakes.leave();
    }
  }

  /**
   * The one output loop: the handoffs one message per peer (the peer admits them together and
   * batches them), one report to the entry with the events in order (nothing if nothing changed),
   * one WORK if the lane changed (Engine.report). An entry in this process hears the report before the WORK, so
   * what it admits in answer joins the batch.
   */
  private ship(out: EngineOutputs, returned: number): void {
    if (out.sent.length > 0) this.sendHandoffs(out.sent);
    if (this.outlet.inProcess) {
      this.report(out.events, returned);
      this.wakes.wake(this);
    } else {
      // the entry mirrors the lane from the report: it must say whether a batch started
      this.wake();
      this.report(out.events, returned);
    }
  }

  private sendHandoffs(sent: EngineOutputs['sent']): void {
    const byPeer = new Map<string, Arrival[]>();
    for (const { to, arrival } of sent) {
      const list = byPeer.get(to);
      if (list) list.push(arrival);
      else byPeer.set(to, [arrival]);
    }
    for (const [name, arrivals] of byPeer) {
      const peer = this.peers.get(name);
      if (peer) peer.arrive(arrivals);
      else this.outlet.viaEntry(name, arrivals);
    }
  }

  // --- what the entry and the peers ask ---

  /**
   * The peer died: handoffs there go by the entry, which holds them until it is back. Its link is
   * dropped, not closed: what the peer sent before it died may still be queued on it (the entry has
   * counted those requests as here), and closing would discard it; the dead end closes the link.
   */
  peerLost(name: string): void {
    this.peers.delete(name);
    this.call(() => this.engine.peerLost(name));
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
    this.call(() => {
      for (const a of arrivals) if (!this.tombstones.has(a.spec.serial)) this.engine.arrive(a);
    });
  }

  deferArrival(ready: Promise<unknown>, a: Arrival): void {
    void ready.then(() => this.arrive([a]));
  }

  /** The entry ended the request; its tallies when this engine owned it. */
  release(id: string, serial: number, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    return this.call(() => {
      const local = this.engine.locals.get(id);
      if (local && local.spec.serial === serial) return this.engine.release(local.spec, status);
      this.tombstones.add(serial);
      if (this.tombstones.size > TOMBSTONES) this.tombstones.delete(this.tombstones.values().next().value!);
      return null;
    });
  }

  setSchedule(threshold: number, maxWaitMs: number): void {
    this.call(() => this.engine.setSchedule(threshold, maxWaitMs));
  }

  gate(): void {
    this.call(() => {
      this.policy.grant(this.engine.index);
      this.engine.report();
    });
  }

  /** A trace reader came or left at the entry: trace events from now on, or none. */
  setTracing(on: boolean): void {
    this.trace = on ? this.sink : undefined;
  }

  setDown(down: boolean): void {
    this.call(() => this.engine.tell(down ? 'DOWN' : 'UP'));
  }

  /** Fails every request this engine holds (their state here may be off); the engine serves on. */
  failHeld(error: Error): number {
    return this.call(() => this.engine.failAll(error));
  }

  /** The runner died with every cache: what this engine held fails, and it refuses work until a runner is put in place. */
  runnerLost(error: Error): number {
    return this.call(() => {
      this.engine.tell('DOWN');
      return this.engine.failAll(error);
    });
  }

  replaceRunner(runner: ModelRunner): void {
    this.call(() => {
      runner.useClock?.(this.clock);
      this.engine.runner = runner;
      this.engine.tell('UP');
    });
  }

  /** The lane actor hears what changed while no batch is in flight (a batch's return looks at the queue itself). */
  wake(): void {
    const e = this.engine;
    if (!e.executing && e.readyCount > 0) this.queueLength(e.readyCount);
    e.report();
    // A queue that emptied says so (a launch took it, or a landed batch did): a reader holds the last length it heard.
    if (e.readyCount === 0 && this.lastQueue > 0) this.queueLength(0);
  }

  private lastQueue = 0;

  private queueLength(length: number): void {
    this.lastQueue = length;
    this.trace?.emit({ type: 'queue', t: this.clock.now(), model: this.engine.name, length });
  }

  private report(events: EngineEvent[], returned: number): void {
    let lane: LaneStats | undefined;
    if (!this.outlet.inProcess) {
      lane = this.engine.laneStats();
      const key = `${lane.ready}/${lane.executing}/${lane.waitingAdmission}/${lane.pendingReturn}/${lane.kvBytes}`;
      const same = key === this.lastLane;
      this.lastLane = key;
      if (same && events.length === 0 && this.traced.length === 0 && returned === 0) return;
    } else if (events.length === 0 && this.traced.length === 0 && returned === 0) return;
    // taken before the report goes: the entry may answer at once (a release), which ships again
    const report = { events, trace: this.traced, lane, returned };
    if (this.traced.length > 0) this.traced = [];
    this.outlet.report(report);
  }

  dispose(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    this.engine.actor.stop();
    // The caches kept for later prompts go with this engine. A `begin` that replaces it (a bench's next server on a
    // borrowed thread, a sub-server taking an entry anew) starts an empty prefix cache, and the runner kept the old
    // one's KV for ever: a bench's later cases ran on thousands of orphaned caches.
    this.engine.queues.prefix?.clear();
  }
}
