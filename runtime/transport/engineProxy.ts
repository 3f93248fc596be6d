// The entry's side of a port: a proxy that posts the engine protocol on a link and mirrors the lane the engine reports; its worker-thread form.
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { MessagePort, Worker } from 'node:worker_threads';
import { ERROR_CODES, TokenRouterError, type ErrorCode } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { RunnerSource } from '../runner/runnerSource.ts';
import { startTsWorker } from '../util/tsWorker.ts';
import type {
  Arrival,
  EngineEntry,
  EngineEvent,
  EngineReport,
  EngineSettings,
  Finish,
  FromEngine,
  LaneStats,
  Moved,
  ToEngine,
  WireArrival,
} from '../../shared/protocol/engineProtocol.ts';
import { fromEngineSchema } from '../../shared/protocol/engineProtocol.ts';
import { EMPTY_LANE } from '../../shared/protocol/laneStats.ts';
import { EngineHandle, reportToEntry } from './engineHandle.ts';
import { toWireArrival } from './serveEngine.ts';

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

/** A step message as the entry applies it: commits in their order first (a finish waits for its commits anyway), then the rest. */
function fromWireStep(m: Extract<FromEngine, { type: 'step' }>): EngineReport {
  const events: EngineEvent[] = [];
  if (m.commits) {
    const { ids, columns, text, signals } = m.commits;
    const n = ids.length;
    let s = 0;
    let from = 0;
    for (let i = 0; i < n; i++) {
      const end = columns[4 * n + i];
      const sig = s < signals.length && signals[s][0] === i ? signals[s++][1] : undefined;
      events.push({
        type: 'commit',
        requestId: ids[i],
        index: columns[i],
        token: columns[n + i],
        model: columns[2 * n + i],
        signals: sig,
        atHandoff: columns[3 * n + i] === 1,
        text: text.slice(from, end),
      });
      from = end;
    }
  }
  for (const e of m.events) {
    if (e.type === 'finish' && e.error) {
      const code = (ERROR_CODES as readonly string[]).includes(e.error.code) ? (e.error.code as ErrorCode) : 'internal';
      events.push({ ...e, error: new TokenRouterError(code, e.error.message, e.error.param) });
    } else events.push(e as Finish | Moved);
  }
  return { events, trace: m.trace, lane: m.lane, returned: m.returned };
}

/** The worker died or failed to load. */
export class EngineThreadError extends Error {
  override readonly name = 'EngineThreadError';
}

/** An engine in its own worker thread (the default placement): the proxy over the worker's port, with the thread's lifecycle. */
export class ThreadEngine extends EngineProxy {
  private constructor(
    name: string,
    private readonly worker: Worker,
    info: ModelInfo,
  ) {
    super(name, info, true, true);
    worker.on('message', (raw) => {
      const malformed = this.receive(raw);
      if (!malformed) return;
      this.fail(new EngineThreadError(malformed.message));
      void worker.terminate();
    });
    worker.on('error', (e) => this.fail(new EngineThreadError(`engine thread of model "${name}" crashed: ${e.message}`)));
    worker.on('exit', (code) => {
      if (!this.closing) this.fail(new EngineThreadError(`engine thread of model "${name}" exited (code ${code})`));
    });
  }

  /** Starts the thread and loads the model's runner in it; resolves when it is ready. */
  static async start(name: string, source: RunnerSource): Promise<ThreadEngine> {
    const worker = startTsWorker(fileURLToPath(new URL('./serveEngine.ts', import.meta.url)), { engineThread: source });
    const fail = (why: string) => new EngineThreadError(`engine thread of model "${name}" ${why}`);
    const loading = new AbortController();
    try {
      const [m] = (await Promise.race([
        once(worker, 'message', loading),
        once(worker, 'exit', loading).then(([code]) => Promise.reject(fail(`exited while loading (code ${code})`))),
      ])) as [FromEngine];
      if (m.type === 'ready') return new ThreadEngine(name, worker, m.info);
      void worker.terminate();
      throw fail(`failed to load: ${m.type === 'load-error' ? m.message : m.type}`);
    } catch (e) {
      // `once` rejects with the worker's 'error' event
      throw e instanceof EngineThreadError ? e : fail(`crashed while loading: ${(e as Error).message}`);
    } finally {
      loading.abort();
    }
  }

  protected post(m: ToEngine, transfer: readonly MessagePort[] = []): void {
    if (!this.failure) this.worker.postMessage(m, transfer);
  }

  /** Test hook: the thread dies with an uncaught error before it handles anything sent after. */
  crashForTest(message = 'crash requested by test'): void {
    this.send({ type: 'crash', message });
  }

  override async close(): Promise<void> {
    if (this.failure || this.closing) return void (await this.worker.terminate());
    this.closing = true;
    const closed = new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 2000);
      this.worker.on('message', (m: FromEngine) => m.type === 'closed' && (clearTimeout(t), resolve()));
      this.worker.once('exit', () => (clearTimeout(t), resolve()));
    });
    this.send({ type: 'close' });
    await closed;
    await this.worker.terminate();
  }
}
