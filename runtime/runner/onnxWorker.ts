// Worker-thread side of WorkerRunner: owns one OnnxRunner and answers step/release messages on its port.
import { parentPort, workerData } from 'node:worker_threads';
import { OnnxRunner, type OnnxRunnerOptions } from './onnxRunner.ts';
import type { FromRunner as WorkerReply, ToRunner as WorkerRequest } from '../../shared/protocol/runnerProtocol.ts';

/** The messages, defined once in shared/protocol/runnerProtocol.ts. */
export type { FromRunner as WorkerReply, ToRunner as WorkerRequest } from '../../shared/protocol/runnerProtocol.ts';

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
    chain = chain.then(async () => {
      if (msg.type === 'release') runner.release(msg.cacheId);
      // the entry said yes already: a fork the runner cannot make fails the target's first step loudly (its cache is unknown)
      else if (msg.type === 'fork') runner.fork(msg.source, msg.target, msg.tokens);
      else if (msg.type === 'step') {
        const id = msg.id;
        try {
          const output = await runner.step(msg.rows);
          // hidden states are fresh copies: transfer them instead of cloning
          const buffers = output.rows.flatMap((r) => (r.hidden ? [r.hidden.buffer as ArrayBuffer] : []));
          port.postMessage({ type: 'result', id, output } satisfies WorkerReply, buffers);
        } catch (e) {
          port.postMessage({ type: 'error', id, message: (e as Error).message, stack: (e as Error).stack } satisfies WorkerReply);
        }
      } else if (msg.type === 'close') {
        await runner.close();
        port.postMessage({ type: 'closed', id: msg.id } satisfies WorkerReply);
        port.close();
      }
    });
  });
  port.postMessage({ type: 'ready', info: runner.info } satisfies WorkerReply);
}

void main();
