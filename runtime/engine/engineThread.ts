// Worker-thread side of a thread engine: the model's runner and its engine together, so a step never leaves the thread.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Algorithm } from '../../shared/algorithm.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { createRealClock, type Clock } from '../clock/clock.ts';
import { loadAlgorithm, type AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { loadRunner, type RunnerSource } from '../runner/runnerSource.ts';
import { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { Engine } from './engine.ts';
import type { EngineHost } from './engineHost.ts';
import { checkEngine } from './invariants.ts';
import { toEngineSchema, toPeerSchema } from '../../shared/protocol/engineProtocol.ts';
import type { Arrival, Commit, EngineLink, EngineSettings, Finish, FromEngine, PortLike, ToEngine, ToPeer, WireArrival, WireEvent } from './messages.ts';
import { commitEvent, finishEvent, fromWireArrival, toWireArrival } from './wire.ts';

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/** The cluster as one engine thread sees it: its clock, its share of the policy, and ports to the entry and its peers. */
class ThreadHost implements EngineHost, EngineLink {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  readonly maxWaitMs: number;
  readonly retainState: boolean;
  readonly trace: { emit(e: TraceEvent): void } | undefined;
  readonly engine: Engine;
  private readonly peers = new Map<string, PortLike>();
  private readonly algorithms = new Map<string, { alg: Algorithm<unknown>; ref: AlgorithmRef }>();
  /** Arrivals whose algorithm's deploy has not come yet (it travels on the entry's port, they on a peer's). */
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
    private readonly port: MessagePort,
    readonly settings: EngineSettings,
    runner: ModelRunner,
  ) {
    this.clock = createRealClock(settings.origin);
    this.policy = new LaunchPolicy(settings.mode);
    this.maxWaitMs = settings.maxWaitMs;
    this.retainState = settings.retainState;
    this.trace = settings.trace ? { emit: (e) => this.traced.push(e) } : undefined;
    const name = settings.models[settings.index];
    this.engine = new Engine(settings.index, { name, runner, maxBatch: settings.maxBatch, threshold: settings.threshold, kvCapacityTokens: settings.kvCapacityTokens, lookahead: settings.lookahead }, this);
  }

  get link(): EngineLink {
    return this;
  }

  nextBatchId(): number {
    return ++this.batchSeq * this.settings.models.length + this.settings.index;
  }

  waveStart(): void {
    this.inWave = true;
  }

  waveEnd(returned: boolean): void {
    if (returned) this.returned++;
    this.inWave = false;
    this.flush();
    // an invariant broken here is a bug: it kills the thread, which the entry reports and restarts
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

  setThreshold(t: number): void {
    this.engine.threshold = t;
    this.engine.dirty = true;
    this.flush();
  }

  gate(): void {
    this.policy.grant(this.engine.index);
    if (!this.engine.executing) this.engine.actor.send({ type: 'GATE' });
    this.flush();
  }

  /** One WORK if ready work arrived, then one message to the entry with everything the wave produced. */
  flush(): void {
    if (this.inWave) return;
    if (this.outbox.size > 0) this.sendHandoffs();
    const e = this.engine;
    if (e.dirty) {
      e.dirty = false;
      this.trace?.emit({ type: 'queue', t: this.clock.now(), model: e.name, length: e.readyCount });
      const fresh = e.executing && e.newWork > 0;
      if (!e.executing || e.canPipeline) e.actor.send({ type: 'WORK' });
      if (fresh) e.yieldAhead();
    }
    const lane = { ...e.laneStats(), newWork: e.newWork };
    const key = `${lane.ready}/${lane.newWork}/${lane.executing}/${lane.waitingAdmission}/${lane.pendingReturn}/${lane.kvBytes}`;
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

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('engineThread.ts must run inside a worker thread');
  const source = workerData as RunnerSource;
  let runner: ModelRunner;
  try {
    runner = await loadRunner(source);
  } catch (e) {
    port.postMessage({ type: 'load-error', message: (e as Error).message } satisfies FromEngine);
    return;
  }
  port.postMessage({ type: 'ready', info: runner.info } satisfies FromEngine);
  let host: ThreadHost | null = null;
  // deploys are asynchronous (a module algorithm is imported): later messages wait behind them, in order
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (raw: unknown) => {
    const m = toEngineSchema.parse(raw);
    if (m.type === 'crash') throw new Error(m.message);
    chain = chain.then(() => handle(m)).catch((e: Error) => {
      // a bug here: die as a crash would, so the entry fails this engine's requests and restarts it
      setImmediate(() => {
        throw e;
      });
    });
  });
  const handle = async (m: ToEngine): Promise<void> => {
    if (m.type === 'begin') {
      // a new deployment (a bench's next server) takes the engine over: the old one held nothing any more
      host?.dispose();
      host = new ThreadHost(port, m.settings, runner);
      for (const [name, p] of Object.entries(m.peers)) host.addPeer(name, p);
      return;
    }
    if (m.type === 'close') {
      await runner.close?.();
      port.postMessage({ type: 'closed' } satisfies FromEngine);
      port.close();
      return;
    }
    if (!host) throw new Error(`engine thread got "${m.type}" before "begin"`);
    switch (m.type) {
      case 'peer':
        return host.addPeer(m.name, m.port);
      case 'deploy':
        return host.deploy(m.ref);
      case 'arrive':
        return host.arrive([m.arrival]);
      case 'release':
        return host.release(m.id, m.serial, m.status);
      case 'threshold':
        return host.setThreshold(m.threshold);
      case 'gate':
        return host.gate();
      case 'down':
        host.engine.down = m.down;
        return;
    }
  };
}

void main();
