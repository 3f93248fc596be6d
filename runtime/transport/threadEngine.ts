// The thread placement: the entry's handle on an engine thread (start, crash, close), the channels between engine threads, and the thread's main.
import { once } from 'node:events';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { MessageChannel, parentPort, workerData, type MessagePort, type Worker } from 'node:worker_threads';
import type { EngineEntry, EngineSettings, FromEngine, ToEngine } from '../../shared/protocol/engineProtocol.ts';
import type { ThreadStats } from '../../shared/protocol/laneStats.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import { loadEngineSide, type RunnerSource } from '../runner/runnerSource.ts';
import { threadCpuMs, threadWaitMs } from '../util/threadCpu.ts';
import { startTsWorker } from '../util/tsWorker.ts';
import { EngineProxy, type EngineHandle } from './engineHandle.ts';
import { serveEngine } from './serveEngine.ts';

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
    const worker = startTsWorker(fileURLToPath(import.meta.url), { engineThread: source });
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

/** Begins `fresh` beside `engines` (a restart takes a dead one's place): a channel to each that takes ports, as `fresh` does. */
export function rejoinEngine(fresh: EngineHandle, settings: EngineSettings, engines: readonly EngineHandle[], entry: EngineEntry): void {
  const peers: Record<string, MessagePort> = {};
  for (const other of engines) {
    if (other === fresh || !other.acceptsPorts || !fresh.acceptsPorts) continue;
    const ch = new MessageChannel();
    peers[other.name] = ch.port1;
    other.addPeer(fresh.name, ch.port2);
  }
  fresh.begin(settings, peers, entry);
}

/** The worker's main: the model's runner and its engine server together, on the parent's port. */
async function engineThread(port: NonNullable<typeof parentPort>, source: RunnerSource): Promise<void> {
  let gcMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration;
  }).observe({ entryTypes: ['gc'] });
  const post = (m: FromEngine) => port.postMessage(m);
  const loaded = await loadEngineSide(source).catch((e: Error) => {
    post({ type: 'load-error', message: e.message });
  });
  if (!loaded) return;
  const { runner, decoder } = loaded;
  post({ type: 'ready', info: runner.info });
  let stats: ThreadStats = { cpuMs: 0, gcMs: 0, waitMs: 0 };
  let statsAt = -Infinity;
  serveEngine(port, runner, {
    trusted: true,
    decoder,
    // read from /proc at most every 25 ms: the benches divide them over a second or two
    threadStats: () => {
      if (performance.now() - statsAt >= 25) {
        stats = { cpuMs: threadCpuMs() ?? 0, gcMs, waitMs: threadWaitMs() ?? 0 };
        statsAt = performance.now();
      }
      return stats;
    },
    onClose: async () => {
      await runner.close?.();
      post({ type: 'closed' });
      port.close();
    },
    // a bug or a crash request: die as a native crash would, so the entry fails this engine's requests and restarts it
    onError: (e) =>
      setImmediate(() => {
        throw e;
      }),
  });
}

if (parentPort && workerData?.engineThread) void engineThread(parentPort, workerData.engineThread);
