// An engine in its own worker thread, as the entry sees it: an engine proxy over the worker's port, and the thread's lifecycle.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import type { Worker } from 'node:worker_threads';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { RunnerSource } from '../runner/runnerSource.ts';
import { startTsWorker } from '../util/tsWorker.ts';
import { EngineProxy } from './engineProxy.ts';
import type { FromEngine } from '../core/messages.ts';

/** The worker died or failed to load. */
export class EngineThreadError extends Error {
  override readonly name = 'EngineThreadError';
}

export class ThreadEngine extends EngineProxy {
  private constructor(
    name: string,
    private readonly worker: Worker,
    info: ModelInfo,
  ) {
    super(name, info, worker, true, true);
    worker.on('message', this.onMessage);
    worker.on('error', (e) => this.fail(new EngineThreadError(`engine thread of model "${name}" crashed: ${e.message}`)));
    worker.on('exit', (code) => {
      if (!this.closing) this.fail(new EngineThreadError(`engine thread of model "${name}" exited (code ${code})`));
    });
  }

  protected override broken(e: Error): void {
    this.fail(e);
    void this.worker.terminate();
  }

  /** Starts the thread and loads the model's runner in it; resolves when it is ready. */
  static start(name: string, source: RunnerSource): Promise<ThreadEngine> {
    roomyOldSpace();
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

  /** Test hook: the thread dies with an uncaught error before it handles anything sent after. */
  crashForTest(message = 'crash requested by test'): void {
    this.send({ type: 'crash', message });
  }

  override async close(): Promise<void> {
    if (this.dead || this.closing) return void (await this.worker.terminate());
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

  protected override linkError(message: string): Error {
    return new EngineThreadError(message.replace(/^engine of/, 'engine thread of'));
  }
}

/** MiB of old space a worker's heap starts with (V8's `--initial-old-space-size`), unless the user set it. */
const ENGINE_INITIAL_OLD_SPACE_MB = 64;

/**
 * An engine thread keeps a small old space (~12 MiB live) while it churns through ORT's output
 * tensors (~1 MiB of KV a step on the small model at batch 8), and V8 kept starting incremental
 * marking on it with the old space far below its limit, most likely because the room left there was
 * under the young generation's size. Measured with --trace-gc over one served run of the small model
 * (64 requests × 128 tokens, c = 8): 26–33 mark-compacts on the engine thread, 1 on the offline
 * loop's model worker; with the old space started at 64 MiB, none (scavenges only). The flag is read
 * when an isolate is made: it applies to workers started after it, not to the main thread.
 */
function roomyOldSpace(): void {
  if (process.execArgv.some((a) => a.startsWith('--initial-old-space-size')) || process.env.NODE_OPTIONS?.includes('--initial-old-space-size')) return;
  v8.setFlagsFromString(`--initial-old-space-size=${ENGINE_INITIAL_OLD_SPACE_MB}`);
}
