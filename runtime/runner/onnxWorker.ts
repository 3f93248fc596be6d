// Worker-thread side of WorkerRunner: owns one OnnxRunner and answers step/release messages on its port.
import { parentPort, workerData } from 'node:worker_threads';
import { OnnxRunner, type OnnxRunnerOptions } from './onnxRunner.ts';
import type { AheadPart, StepOutput, StepRow } from './modelRunner.ts';

export type WorkerRequest =
  | { type: 'step'; id: number; rows: StepRow[] }
  | { type: 'release'; cacheId: number }
  | { type: 'fork'; source: number; target: number; tokens: number }
  | { type: 'close'; id: number }
  /** New work waits on the main thread: the step in flight takes no further lookahead step. */
  | { type: 'yield' }
  /** Test hook: the worker throws an uncaught error, as a native crash or bug would kill it. */
  | { type: 'crash'; message: string };

export type WorkerReply =
  | { type: 'ready'; info: OnnxRunner['info']; maxAhead: number }
  /** streaming: lookahead parts follow as "ahead" messages, then "ahead-end". */
  | { type: 'result'; id: number; output: StepOutput; streaming?: boolean }
  | { type: 'ahead'; id: number; part: AheadPart }
  | { type: 'ahead-end'; id: number; message?: string }
  | { type: 'error'; id: number; message: string; stack?: string }
  | { type: 'closed'; id: number };

export interface WorkerInit {
  folder: string;
  opts: OnnxRunnerOptions;
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('onnxWorker.ts must run inside a worker thread');
  const init = workerData as WorkerInit;
  let runner: OnnxRunner;
  try {
    runner = await OnnxRunner.load(init.folder, init.opts);
  } catch (e) {
    port.postMessage({ type: 'error', id: -1, message: (e as Error).message, stack: (e as Error).stack } satisfies WorkerReply);
    return;
  }
  // steps are queued here so the port's FIFO order is the execution order (release after step, etc.)
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (msg: WorkerRequest) => {
    if (msg.type === 'crash') throw new Error(msg.message);
    // not queued behind the step: it is for the step running now
    if (msg.type === 'yield') return runner.yieldAhead();
    chain = chain.then(async () => {
      if (msg.type === 'release') runner.release(msg.cacheId);
      // the entry said yes already: a fork the runner cannot make fails the target's first step loudly (its cache is unknown)
      else if (msg.type === 'fork') runner.fork(msg.source, msg.target, msg.tokens);
      else if (msg.type === 'step') {
        const id = msg.id;
        let streamed = false;
        // hidden states are fresh copies: transfer them instead of cloning
        const buffers = (rows: readonly ({ hidden?: Float32Array } | undefined)[]) => rows.flatMap((r) => (r?.hidden ? [r.hidden.buffer as ArrayBuffer] : []));
        const sink = msg.rows.some((r) => (r.ahead ?? 0) > 0)
          ? {
              first: (output: StepOutput) => {
                streamed = true;
                port.postMessage({ type: 'result', id, output, streaming: true } satisfies WorkerReply, buffers(output.rows));
              },
              part: (part: AheadPart) => port.postMessage({ type: 'ahead', id, part } satisfies WorkerReply, buffers(part.rows)),
            }
          : undefined;
        try {
          const output = await runner.step(msg.rows, sink);
          if (streamed) port.postMessage({ type: 'ahead-end', id } satisfies WorkerReply);
          else port.postMessage({ type: 'result', id, output } satisfies WorkerReply, buffers(output.rows));
        } catch (e) {
          if (streamed) port.postMessage({ type: 'ahead-end', id, message: (e as Error).message } satisfies WorkerReply);
          else port.postMessage({ type: 'error', id, message: (e as Error).message, stack: (e as Error).stack } satisfies WorkerReply);
        }
      } else if (msg.type === 'close') {
        await runner.close();
        port.postMessage({ type: 'closed', id: msg.id } satisfies WorkerReply);
        port.close();
      }
    });
  });
  port.postMessage({ type: 'ready', info: runner.info, maxAhead: runner.maxAhead } satisfies WorkerReply);
}

void main();
