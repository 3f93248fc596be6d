// The engine as the entry drives it: one handle whatever the transport, and its form over a link (a thread's port, NATS).
import type { MessagePort } from 'node:worker_threads';
import { fromWireError } from '../errors.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import {
  fromEngineSchema,
  type AlgorithmRef,
  type Arrival,
  type EngineEntry,
  type EngineEvent,
  type EngineReport,
  type EngineSettings,
  type FromEngine,
  type LaneStats,
  type RequestCounters,
  type RequestSpec,
  type ToEngine,
  type WireArrival,
} from '../../shared/protocol/engineProtocol.ts';
import { EMPTY_LANE } from '../../shared/protocol/laneStats.ts';
import { EngineControls } from './engineControls.ts';
import { toWireArrival } from './serveEngine.ts';

/** An engine as the entry drives it, wherever it runs, so the entry never asks which; what is not a request's call is in EngineControls. */
export abstract class EngineHandle extends EngineControls {
  abstract readonly info: ModelInfo;
  index = -1;
  maxBatch = 1;
  maxStepTokens = Infinity;
  kvCapacityTokens = Infinity;
  /** The engine died with its state (a thread or a link gone for good), until a fresh one takes its place. */
  failure: Error | null = null;
  protected entry: EngineEntry | null = null;

  /** Taken down by the operator, its runner dead, or no replica to place on: new requests are refused. */
  get down(): boolean {
    return this.takenDown || this.failure !== null;
  }

  /** Gives the engine its place in a deployment and its peers; called again, it joins a new one (benches reuse loaded models). */
  begin(settings: EngineSettings, _peers: Record<string, MessagePort>, entry: EngineEntry): void {
    const { index, maxBatch, maxStepTokens, threshold, kvCapacityTokens } = settings;
    Object.assign(this, { index, maxBatch, maxStepTokens, threshold, kvCapacityTokens, entry });
  }

  /** Why a new request must be refused now although the engine is not down (a remote model cut off from its broker). */
  admissionError?(): Error | null;
  /** Makes sure the engine can build the algorithm before a request of it arrives (in this process its spec carries it). */
  deploy(_ref: AlgorithmRef): void {}

  abstract arrive(a: Arrival): void;

  /** Drops what the engine holds of a request; its tallies when the engine can say them now (in this process). */
  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    return this.send({ type: 'release', id: spec.id, serial: spec.serial, status });
  }
}

/** A report's events in order as one cascade: requests the entry starts as others finish join one batch of an engine beside it. */
export function reportToEntry(entry: EngineEntry, r: EngineReport): void {
  entry.cascade(() => {
    if (r.trace.length > 0) entry.traced(r.trace);
    for (const e of r.events) {
      if (e.type === 'commit') entry.commit(e);
      else if (e.type === 'moved') entry.moved(e.requestId, e.to, e.hops);
      else entry.finish(e);
    }
    entry.reported(r.returned);
  });
}

/** An engine the entry drives through messages, whatever carries them: subclasses own the link (`post`) and call `receive` and `fail`. */
export abstract class EngineProxy extends EngineHandle {
  protected lane: LaneStats | null = null;
  /** Algorithms deployed since `begin`, by key (a remote model's replica that joins later gets them too). */
  protected readonly deployed = new Map<string, AlgorithmRef>();
  private readonly failureListeners: ((e: Error) => void)[] = [];
  private arrivals: WireArrival[] = [];
  private readonly postArrivals = (): void => {
    if (this.arrivals.length === 0) return;
    const arrivals = this.arrivals;
    this.arrivals = [];
    this.post({ type: 'arrive', arrivals });
  };
  protected closing = false;
  /** checkInvariants: every message is checked, a trusted thread's too. */
  private checked = false;

  constructor(
    name: string,
    readonly info: ModelInfo,
    readonly acceptsPorts: boolean,
    /** The peer is this program in another thread: its messages are not checked (a NATS peer's are). */
    private readonly trusted = false,
  ) {
    super(name);
  }

  override begin(settings: EngineSettings, peers: Record<string, MessagePort>, entry: EngineEntry): void {
    super.begin(settings, peers, entry);
    this.checked = settings.checkInvariants;
    this.lane = null;
    this.deployed.clear();
    this.send({ type: 'begin', settings, peers }, Object.values(peers));
  }

  override addPeer(name: string, port: MessagePort): void {
    this.send({ type: 'peer', name, port }, [port]);
  }

  override deploy(ref: AlgorithmRef): void {
    if (this.deployed.has(ref.key)) return;
    this.deployed.set(ref.key, ref);
    this.send({ type: 'deploy', ref });
  }

  get readyCount(): number {
    return this.lane?.ready ?? 0;
  }
  get executing(): boolean {
    return this.lane?.executing ?? false;
  }

  /** Arrivals wait for the end of this turn of the entry's event loop and go as one message: a burst prefills in one step, not one then the rest. */
  arrive(a: Arrival): void {
    if (this.arrivals.push(toWireArrival(a)) === 1) setImmediate(this.postArrivals);
  }

  laneStats(): LaneStats {
    return { ...(this.lane ?? { name: this.name, ...EMPTY_LANE }), threshold: this.threshold };
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
  }

  protected send(m: ToEngine, transfer: readonly MessagePort[] = []): null {
    // arrivals still waiting go first: the engine sees every message in the order the entry made it
    this.postArrivals();
    this.post(m, transfer);
    return null;
  }

  /** Puts one message on the link (a subclass with several links picks one). */
  protected abstract post(m: ToEngine, transfer?: readonly MessagePort[]): void;

  /** The engine's lane as it last reported it (`from`: which of several links said so). */
  protected mirror(lane: LaneStats, _from: unknown): void {
    this.lane = lane;
  }

  /** A message from the engine, checked unless the peer is trusted; an error: it was malformed (the link is no longer trusted). */
  protected receive(raw: unknown, from?: unknown): Error | null {
    const entry = this.entry;
    if (!entry) return null;
    let m = raw as FromEngine;
    if (!this.trusted || this.checked) {
      const parsed = fromEngineSchema.safeParse(raw);
      if (!parsed.success) return new Error(`engine of model "${this.name}" sent a malformed message: ${parsed.error.issues[0]?.message}`);
      m = parsed.data;
    }
    if (m.type === 'deliver') entry.cascade(() => entry.deliverWire(m.to, m.arrivals));
    if (m.type !== 'step') return null;
    this.mirror(m.lane, from);
    reportToEntry(entry, fromWireStep(m));
    return null;
  }

  protected fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    this.lane = null;
    if (!this.closing) for (const l of this.failureListeners) l(e);
  }
}

/** A step message as the entry applies it: its events in order, an error made an Error again. */
function fromWireStep(m: Extract<FromEngine, { type: 'step' }>): EngineReport {
  const events = m.events.map((e): EngineEvent => (e.type === 'finish' && e.error ? { ...e, error: fromWireError(e.error) } : (e as EngineEvent)));
  return { events, trace: m.trace, lane: m.lane, returned: m.returned };
}
