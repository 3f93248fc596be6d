// The entry's client of an engine in another thread or process: posts the protocol on a link and mirrors the lane it reports.
import type { MessagePort } from 'node:worker_threads';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { Arrival, EngineEntry, EngineSettings, FromEngine, LaneStats, ToEngine, WireArrival } from '../core/messages.ts';
import { fromEngineSchema } from '../../shared/protocol/engineProtocol.ts';
import { EngineHandle, reportToEntry } from './engineHandle.ts';
import { fromWireStep, toWireArrival } from './wire.ts';

export const EMPTY_LANE: Omit<LaneStats, 'name' | 'threshold'> = {
  ready: 0,
  running: 0,
  waitingAdmission: 0,
  pendingReturn: 0,
  executing: false,
  kvBytes: 0,
  kvReservedBytes: 0,
  batches: 0,
  rows: 0,
  chunks: 0,
  admissions: 0,
  evictions: 0,
  busyMs: 0,
  batchMs: 0,
  modelMs: 0,
  prefixQueries: 0,
  prefixHits: 0,
  prefixEntries: 0,
  kvPrefixBytes: 0,
};

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
