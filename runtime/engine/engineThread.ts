// Worker-thread side of a thread engine: the model's runner and its engine server together, on the parent's MessagePort.
import { parentPort, workerData } from 'node:worker_threads';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { loadDecoder, loadRunner, type RunnerSource } from '../runner/runnerSource.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';
import { serveEngine } from './serveEngine.ts';
import type { FromEngine } from './messages.ts';

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('engineThread.ts must run inside a worker thread');
  const source = workerData as RunnerSource;
  let runner: ModelRunner;
  let decoder: Decoder | undefined;
  try {
    [runner, decoder] = await Promise.all([loadRunner(source), loadDecoder(source)]);
  } catch (e) {
    port.postMessage({ type: 'load-error', message: (e as Error).message } satisfies FromEngine);
    return;
  }
  port.postMessage({ type: 'ready', info: runner.info } satisfies FromEngine);
  serveEngine(port, runner, {
    trusted: true,
    decoder,
    onClose: async () => {
      await runner.close?.();
      port.postMessage({ type: 'closed' } satisfies FromEngine);
      port.close();
    },
    // a bug or a crash request: die as a native crash would, so the entry fails this engine's requests and restarts it
    onError: (e) =>
      setImmediate(() => {
        throw e;
      }),
  });
}

void main();
