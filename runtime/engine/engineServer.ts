// One model's engine served over any transport (a MessagePort to a worker's parent, a NATS link): the engine protocol's server side.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { createRealClock, type Clock } from '../clock/clock.ts';
import { loadAlgorithm, type AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { Engine } from './engine.ts';
import type { EngineHost } from './engineHost.ts';
import { checkEngine } from './invariants.ts';
import { toEngineSchema, toPeerSchema } from '../../shared/protocol/engineProtocol.ts';
import type { Arrival, Commit, EngineLink, EngineSettings, Finish, FromEngine, PortLike, ToEngine, ToPeer, WireArrival, WireEvent } from './messages.ts';
import { commitEvent, finishEvent, fromWireArrival, toWireArrival } from './wire.ts';

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/** The cluster as one engine sees it from its own thread or process: its clock, its share of the policy, and links to the entry and its peers. */
export class EngineServer implements EngineHost, EngineLink {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  readonly retainState: boolean;
  readonly trace: { emit(e: TraceEvent): void } | undefined;
  readonly engine: Engine;
  private readonly peers = new Map<string, PortLike>();
  private readonly algorithms = new Map<string, { alg: Algorithm<unknown>; ref: AlgorithmRef }>();
  /** Arrivals whose algorithm's deploy has not come yet (it travels on the entry's link, they on a peer's). */
  private readonly parked = new Map<string, WireArrival[]>();
  private readonly tombstones = new Set<number>();
  private events: WireEvent[] = [];
  private readonly outbox = new Map<string, WireArrival[]>();
  private traced: TraceEvent[] = [];
  private returned = 0;
  private inWave = false;
  private batchSeq = 0;
  private lastLane = '';

  constructor(
    private readonly port: PortLike,
    readonly settings: EngineSettings,
    runner: ModelRunner,
  ) {
    this.clock = createRealClock(settings.origin);
    this.policy = new LaunchPolicy(settings.mode);
    this.retainState = settings.retainState;
    this.trace = settings.trace ? { emit: (e) => this.traced.push(e) } : undefined;
    const name = settings.models[settings.index];
    this.engine = new Engine(settings.index, { name, runner, maxBatch: settings.maxBatch, threshold: settings.threshold, maxWaitMs: settings.maxWaitMs, kvCapacityTokens: settings.kvCapacityTokens, prefixCache: settings.prefixCache }, this);
  }

  get link(): EngineLink {
    return this;
  }

  /** Requests this engine holds state for. */
  get held(): number {
    return this.engine.locals.size;
  }

  nextBatchId(): number {
    return ++this.batchSeq * this.settings.models.length + this.settings.index;
  }

  waveStart(): void {
    this.inWave = true;
  }

  waveEnd(): void {
    this.returned++;
    this.inWave = false;
    this.flush();
    // an invariant broken here is a bug: it kills the thread (or process), which the entry reports
    if (this.settings.checkInvariants) checkEngine(this.engine);
  }

  // --- EngineLink ---

  commit(c: Commit): void {
    this.events.push(commitEvent(c));
  }

  finish(f: Finish): void {
    this.events.push(finishEvent(f));
    // As in one process: the entry's release would come straight back here, so free the cache now.
    const local = this.engine.locals.get(f.requestId);
    if (local) this.engine.release(local.spec, f.status);
  }

  /** Handoffs leave when the wave ends, one message per peer: the peer admits them together and batches them. */
  deliver(name: string, a: Arrival): void {
    this.events.push({ type: 'moved', requestId: a.spec.id, to: name, hops: a.counters.handoffs });
    const list = this.outbox.get(name);
    if (list) list.push(toWireArrival(a));
    else this.outbox.set(name, [toWireArrival(a)]);
    if (!this.inWave) this.sendHandoffs();
  }

  private sendHandoffs(): void {
    for (const [name, arrivals] of this.outbox) {
      const peer = this.peers.get(name);
      if (peer) peer.postMessage({ type: 'arrive', arrivals } satisfies ToPeer);
      else this.post({ type: 'deliver', to: name, arrivals });
    }
    this.outbox.clear();
  }

  // --- messages in ---

  /** The peer died: its port is dead, so handoffs there go by the entry, which holds them until it is back. */
  peerLost(name: string): void {
    this.peers.get(name)?.close();
    this.peers.delete(name);
    this.engine.peerLost(name);
  }

  addPeer(name: string, port: PortLike): void {
    this.peers.get(name)?.close();
    this.peers.set(name, port);
    port.on('message', (m) => this.arrive(toPeerSchema.parse(m).arrivals));
  }

  async deploy(ref: AlgorithmRef): Promise<void> {
    if (!this.algorithms.has(ref.key)) this.algorithms.set(ref.key, { alg: await loadAlgorithm(ref), ref });
    const waiting = this.parked.get(ref.key);
    this.parked.delete(ref.key);
    if (waiting) this.arrive(waiting);
  }

  arrive(arrivals: readonly WireArrival[]): void {
    for (const w of arrivals) {
      if (this.tombstones.has(w.spec.serial)) continue;
      const a = fromWireArrival(w, (key) => this.algorithms.get(key));
      if (a) this.engine.arrive(a);
      else {
        const list = this.parked.get(w.spec.algorithm) ?? [];
        list.push(w);
        this.parked.set(w.spec.algorithm, list);
      }
    }
    this.flush();
  }

  release(id: string, serial: number, status: 'done' | 'failed' | 'cancelled'): void {
    const local = this.engine.locals.get(id);
    if (local && local.spec.serial === serial) this.engine.release(local.spec, status);
    else {
      this.tombstones.add(serial);
      if (this.tombstones.size > TOMBSTONES) this.tombstones.delete(this.tombstones.values().next().value!);
    }
    this.flush();
  }

  setSchedule(threshold: number, maxWaitMs: number): void {
    this.engine.setSchedule(threshold, maxWaitMs);
    this.flush();
  }

  gate(): void {
    this.policy.grant(this.engine.index);
    if (!this.engine.executing) this.engine.actor.send({ type: 'GATE' });
    this.flush();
  }

  /** One WORK if ready work arrived, then one message to the entry with everything the wave produced (nothing if nothing changed). */
  flush(): void {
    if (this.inWave) return;
    if (this.outbox.size > 0) this.sendHandoffs();
    const e = this.engine;
    if (e.dirty) {
      e.dirty = false;
      this.trace?.emit({ type: 'queue', t: this.clock.now(), model: e.name, length: e.readyCount });
      if (!e.executing) e.actor.send({ type: 'WORK' });
    }
    const lane = e.laneStats();
    const key = `${lane.ready}/${lane.executing}/${lane.waitingAdmission}/${lane.pendingReturn}/${lane.kvBytes}`;
    if (this.events.length === 0 && this.traced.length === 0 && this.returned === 0 && key === this.lastLane) return;
    this.lastLane = key;
    this.post({ type: 'step', events: this.events, trace: this.traced, lane, returned: this.returned });
    this.events = [];
    this.traced = [];
    this.returned = 0;
  }

  dispose(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    this.engine.actor.stop();
  }

  post(m: FromEngine): void {
    this.port.postMessage(m);
  }
}

export interface ServeOptions {
  /** The entry said `close`: a worker closes its runner and leaves; a sub-server outlives its entries and only forgets this one. */
  onClose(): Promise<void>;
  /** A message that cannot be handled (a bug, a malformed message): a worker dies as a crash would. */
  onError(e: Error): void;
  /** A new engine server (a `begin`) replaced the one before. */
  onBegin?(server: EngineServer): void;
}

/**
 * Serves the engine protocol on `port` with `runner`: each `begin` builds an engine server (a new
 * deployment, such as a bench's next server, takes the engine over: the old one held nothing any
 * more). Messages are validated and handled in order; deploys are asynchronous, later messages wait.
 */
export function serveEngine(port: PortLike, runner: ModelRunner, opts: ServeOptions): { readonly server: EngineServer | null } {
  let server: EngineServer | null = null;
  let chain: Promise<void> = Promise.resolve();
  const handle = async (m: ToEngine): Promise<void> => {
    if (m.type === 'begin') {
      server?.dispose();
      server = new EngineServer(port, m.settings, runner);
      for (const [name, p] of Object.entries(m.peers)) server.addPeer(name, p);
      opts.onBegin?.(server);
      return;
    }
    if (m.type === 'close') {
      server?.dispose();
      server = null;
      return opts.onClose();
    }
    if (!server) throw new Error(`engine got "${m.type}" before "begin"`);
    switch (m.type) {
      case 'peer':
        return server.addPeer(m.name, m.port);
      case 'deploy':
        return server.deploy(m.ref);
      case 'arrive':
        return server.arrive([m.arrival]);
      case 'release':
        return server.release(m.id, m.serial, m.status);
      case 'threshold':
        return server.setSchedule(m.threshold, m.maxWaitMs);
      case 'gate':
        return server.gate();
      case 'down':
        server.engine.down = m.down;
        return;
      case 'peer-lost':
        return server.peerLost(m.model);
    }
  };
  port.on('message', (raw: unknown): void => {
    const parsed = toEngineSchema.safeParse(raw);
    if (!parsed.success) return opts.onError(new Error(`malformed engine message: ${parsed.error.issues[0]?.message}`));
    const m = parsed.data;
    if (m.type === 'crash') return opts.onError(new Error(m.message));
    chain = chain.then(() => handle(m)).catch((e: Error) => opts.onError(e));
  });
  return {
    get server() {
      return server;
    },
  };
}
