// Entry side of an engine in its own worker thread: a thin client that posts the protocol and mirrors what the engine reports.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { TraceEvent } from '../../shared/trace.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { RunnerSource } from '../runner/runnerSource.ts';
import { startTsWorker } from '../util/tsWorker.ts';
import type { LaneStats } from './laneStats.ts';
import type { RequestCounters, RequestSpec } from './localRequest.ts';
import type { Arrival, Commit, EngineClient, EngineSettings, Finish, FromEngine, ToEngine, WireArrival } from './messages.ts';
import { fromWireError, toWireArrival } from './wire.ts';
import { fromEngineSchema } from '../../shared/protocol/engineProtocol.ts';

/** The worker died or failed to load. */
export class EngineThreadError extends Error {
  override readonly name = 'EngineThreadError';
}

/** What the entry hears from an engine thread. */
export interface ThreadEntry {
  commit(c: Commit): void;
  finish(f: Finish): void;
  /** A handoff from the thread to an engine at the entry. */
  deliverWire(to: string, arrivals: readonly WireArrival[]): void;
  traced(events: readonly TraceEvent[]): void;
  /** A report was applied; `returned`: batches the engine finished since it last said (a sync barrier counts them). */
  reported(returned: number): void;
}

export class ThreadEngine implements EngineClient {
  index = -1;
  maxBatch = 1;
  threshold = 1;
  kvCapacityTokens = Infinity;
  private takenDown = false;
  private lane: (LaneStats & { newWork: number }) | null = null;
  private entry: ThreadEntry | null = null;
  private readonly deployed = new Set<string>();
  private readonly failureListeners: ((e: Error) => void)[] = [];
  private dead: Error | null = null;
  private closing = false;

  private constructor(
    readonly name: string,
    private readonly worker: Worker,
    readonly info: ModelInfo,
  ) {
    worker.on('message', (m: unknown) => this.onMessage(m));
    worker.on('error', (e) => this.fail(new EngineThreadError(`engine thread of model "${name}" crashed: ${e.message}`)));
    worker.on('exit', (code) => {
      if (!this.closing) this.fail(new EngineThreadError(`engine thread of model "${name}" exited (code ${code})`));
    });
  }

  /** Starts the thread and loads the model's runner in it; resolves when it is ready. */
  static start(name: string, source: RunnerSource): Promise<ThreadEngine> {
    const worker = startTsWorker(path.join(path.dirname(fileURLToPath(import.meta.url)), 'engineThread.ts'), source);
    return new Promise<ThreadEngine>((resolve, reject) => {
      const cleanup = () => {
        worker.off('message', onMsg);
        worker.off('error', onErr);
        worker.off('exit', onExit);
      };
      const onMsg = (m: FromEngine) => {
        cleanup();
        if (m.type === 'ready') return resolve(new ThreadEngine(name, worker, m.info));
        void worker.terminate();
        reject(new EngineThreadError(`engine thread of model "${name}" failed to load: ${m.type === 'load-error' ? m.message : m.type}`));
      };
      const onErr = (e: Error) => {
        cleanup();
        reject(new EngineThreadError(`engine thread of model "${name}" crashed while loading: ${e.message}`));
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new EngineThreadError(`engine thread of model "${name}" exited while loading (code ${code})`));
      };
      worker.on('message', onMsg);
      worker.on('error', onErr);
      worker.on('exit', onExit);
    });
  }

  /**
   * Gives the engine its place in a deployment and ports to its peers; from here it takes requests.
   * Called again, it joins a new deployment (benches reuse loaded models across servers).
   */
  begin(settings: EngineSettings, peers: Record<string, MessagePort>, entry: ThreadEntry): void {
    this.index = settings.index;
    this.maxBatch = settings.maxBatch;
    this.threshold = settings.threshold;
    this.kvCapacityTokens = settings.kvCapacityTokens;
    this.entry = entry;
    this.lane = null;
    this.deployed.clear();
    this.post({ type: 'begin', settings, peers }, Object.values(peers));
  }

  /** A peer engine thread was (re)started: its new port. */
  addPeer(name: string, port: MessagePort): void {
    this.post({ type: 'peer', name, port }, [port]);
  }

  /** Makes sure the engine can build the algorithm before a request of it arrives. */
  deploy(ref: AlgorithmRef): void {
    if (this.deployed.has(ref.key)) return;
    this.deployed.add(ref.key);
    this.post({ type: 'deploy', ref });
  }

  get readyCount(): number {
    return this.lane?.ready ?? 0;
  }
  get newWork(): number {
    return this.lane?.newWork ?? 0;
  }
  get executing(): boolean {
    return this.lane?.executing ?? false;
  }

  arrive(a: Arrival): void {
    this.post({ type: 'arrive', arrival: toWireArrival(a) });
  }

  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    this.post({ type: 'release', id: spec.id, serial: spec.serial, status });
    return null;
  }

  setThreshold(t: number): void {
    this.threshold = t;
    this.post({ type: 'threshold', threshold: t });
  }

  /** Taken down by the operator, or the thread died (until a fresh one takes its place). */
  get down(): boolean {
    return this.takenDown || this.dead !== null;
  }

  setDown(down: boolean): void {
    this.takenDown = down;
    this.post({ type: 'down', down });
  }

  gate(): void {
    this.post({ type: 'gate' });
  }

  laneStats(): LaneStats {
    const { newWork: _n, ...lane } = this.lane ?? { name: this.name, threshold: this.threshold, ready: 0, running: 0, waitingAdmission: 0, pendingReturn: 0, executing: false, kvBytes: 0, kvReservedBytes: 0, batches: 0, rows: 0, admissions: 0, evictions: 0, busyMs: 0, aheadRows: 0, newWork: 0 };
    return { ...lane, threshold: this.threshold };
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  /** Test hook: the thread dies with an uncaught error before it handles anything sent after. */
  crashForTest(message = 'crash requested by test'): void {
    this.post({ type: 'crash', message });
  }

  async close(): Promise<void> {
    if (this.dead || this.closing) return void (await this.worker.terminate());
    this.closing = true;
    const closed = new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 2000);
      this.worker.on('message', (m: FromEngine) => m.type === 'closed' && (clearTimeout(t), resolve()));
      this.worker.once('exit', () => (clearTimeout(t), resolve()));
    });
    this.post({ type: 'close' });
    await closed;
    await this.worker.terminate();
  }

  private post(m: ToEngine, transfer: MessagePort[] = []): void {
    if (!this.dead) this.worker.postMessage(m, transfer);
  }

  private onMessage(raw: unknown): void {
    const entry = this.entry;
    if (!entry) return;
    const parsed = fromEngineSchema.safeParse(raw);
    if (!parsed.success) {
      this.fail(new EngineThreadError(`engine thread of model "${this.name}" sent a malformed message: ${parsed.error.issues[0]?.message}`));
      void this.worker.terminate();
      return;
    }
    const m = parsed.data;
    if (m.type === 'deliver') return entry.deliverWire(m.to, m.arrivals);
    if (m.type !== 'step') return;
    this.lane = m.lane;
    if (m.trace.length > 0) entry.traced(m.trace);
    for (const e of m.events) {
      if (e.type === 'commit') entry.commit(e);
      else entry.finish({ ...e, error: e.error && fromWireError(e.error) });
    }
    entry.reported(m.returned);
  }

  private fail(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    this.lane = null;
    if (!this.closing) for (const l of this.failureListeners) l(e);
  }
}

/** Starts a deployment of engine threads: a channel between every pair, then each begins with its ports. */
export function beginThreads(starts: readonly { engine: ThreadEngine; settings: EngineSettings }[], entry: ThreadEntry): void {
  const peers = starts.map(() => ({}) as Record<string, MessagePort>);
  for (let a = 0; a < starts.length; a++) {
    for (let b = a + 1; b < starts.length; b++) {
      const ch = new MessageChannel();
      peers[a][starts[b].engine.name] = ch.port1;
      peers[b][starts[a].engine.name] = ch.port2;
    }
  }
  starts.forEach((s, k) => s.engine.begin(s.settings, peers[k], entry));
}

/** A restarted engine thread takes the place of a dead one: fresh channels to every other engine thread. */
export function rejoinThread(fresh: ThreadEngine, settings: EngineSettings, threads: readonly ThreadEngine[], entry: ThreadEntry): void {
  const peers: Record<string, MessagePort> = {};
  for (const other of threads) {
    if (other === fresh) continue;
    const ch = new MessageChannel();
    peers[other.name] = ch.port1;
    other.addPeer(fresh.name, ch.port2);
  }
  fresh.begin(settings, peers, entry);
}
