// ModelRunner whose OnnxRunner lives in its own worker thread, so models of different speeds run in parallel.
import type { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { startTsWorker } from '../util/tsWorker.ts';
import path from 'node:path';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from './modelRunner.ts';
import type { OnnxRunnerOptions } from './onnxRunner.ts';
import type { WorkerInit, WorkerReply, WorkerRequest } from './onnxWorker.ts';

/** The worker died or failed to load; pending and later steps reject with it. */
export class WorkerRunnerError extends Error {
  override readonly name = 'WorkerRunnerError';
}

interface Pending {
  resolve: (o: StepOutput) => void;
  reject: (e: Error) => void;
}

export class WorkerRunner implements ModelRunner {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private dead: Error | null = null;
  private closing = false;

  private constructor(
    private readonly worker: Worker,
    readonly info: ModelInfo,
  ) {
    worker.on('message', (m: WorkerReply) => this.onMessage(m));
    worker.on('error', (e) => this.fail(new WorkerRunnerError(`worker for model "${info.name}" crashed: ${e.message}`)));
    worker.on('exit', (code) => {
      if (!this.closing || this.pending.size) this.fail(new WorkerRunnerError(`worker for model "${info.name}" exited (code ${code})`));
    });
  }

  /** Starts a worker, loads the model folder in it and resolves when it is ready. */
  static start(folder: string, opts: OnnxRunnerOptions = {}): Promise<WorkerRunner> {
    const init: WorkerInit = { folder: path.resolve(folder), opts };
    const worker = startTsWorker(path.join(path.dirname(fileURLToPath(import.meta.url)), 'onnxWorker.ts'), init);
    return new Promise<WorkerRunner>((resolve, reject) => {
      const onMsg = (m: WorkerReply) => {
        cleanup();
        if (m.type === 'ready') resolve(new WorkerRunner(worker, m.info));
        else {
          void worker.terminate();
          reject(new WorkerRunnerError(`worker failed to load ${folder}: ${m.type === 'error' ? m.message : m.type}`));
        }
      };
      const onErr = (e: Error) => {
        cleanup();
        reject(new WorkerRunnerError(`worker for ${folder} crashed while loading: ${e.message}`));
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new WorkerRunnerError(`worker for ${folder} exited while loading (code ${code})`));
      };
      const cleanup = () => {
        worker.off('message', onMsg);
        worker.off('error', onErr);
        worker.off('exit', onExit);
      };
      worker.on('message', onMsg);
      worker.on('error', onErr);
      worker.on('exit', onExit);
    });
  }

  private onMessage(m: WorkerReply): void {
    if (m.type === 'ready') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.type === 'result') p.resolve(m.output);
    else if (m.type === 'error') p.reject(new WorkerRunnerError(m.message));
    else p.resolve({ rows: [] });
  }

  private readonly failureListeners: ((e: Error) => void)[] = [];

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  private fail(e: Error): void {
    const first = !this.dead;
    if (!this.dead) this.dead = e;
    if (first && !this.closing) for (const l of this.failureListeners) l(e);
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  private send(msg: WorkerRequest): void {
    this.worker.postMessage(msg);
  }

  step(rows: readonly StepRow[]): Promise<StepOutput> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<StepOutput>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // a row's grammar mask (an Int32Array of ceil(V / 32) words, 19 KB at V = 151,936) is copied by
      // the structured clone, not transferred: the engine may keep its buffer for the next step
      this.send({ type: 'step', id, rows: rows as StepRow[] });
    });
  }

  release(cacheId: number): void {
    if (!this.dead) this.send({ type: 'release', cacheId });
  }

  /** Queued behind the steps before it, as release is; the worker's runner holds every cache this one named. */
  fork(source: number, target: number, tokens: number): boolean {
    if (this.dead) return false;
    this.send({ type: 'fork', source, target, tokens });
    return true;
  }

  /** Test hook: makes the worker die with an uncaught error before it handles anything sent after. */
  crashForTest(message = 'crash requested by test'): void {
    this.send({ type: 'crash', message });
  }

  async close(): Promise<void> {
    if (this.dead) {
      await this.worker.terminate();
      return;
    }
    const id = this.nextId++;
    const done = new Promise<StepOutput>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.send({ type: 'close', id });
    try {
      await done;
    } finally {
      this.closing = true;
      await this.worker.terminate();
    }
  }
}
