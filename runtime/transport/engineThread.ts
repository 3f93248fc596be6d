// Worker-thread side of a thread engine: the model's runner and its engine server together, on the parent's MessagePort.
import { parentPort, workerData } from 'node:worker_threads';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { loadDecoder, loadRunner, type RunnerSource } from '../runner/runnerSource.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';
import { serveEngine } from './serveEngine.ts';
import { PerformanceObserver } from 'node:perf_hooks';
import { threadCpuMs, threadWaitMs } from '../util/threadCpu.ts';
import type { FromEngine } from '../core/messages.ts';
import type { ThreadStats } from '../../shared/protocol/engineProtocol.ts';

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });
let stats: ThreadStats = { cpuMs: 0, gcMs: 0, waitMs: 0 };
let statsAt = -Infinity;

/** This thread's CPU, GC and run-queue wait, read from /proc at most every 25 ms (the benches divide them by tokens, over windows of a second or two). */
function threadStats(): ThreadStats {
  const now = performance.now();
  if (now - statsAt >= 25) {
    stats = { cpuMs: threadCpuMs() ?? 0, gcMs, waitMs: threadWaitMs() ?? 0 };
    statsAt = now;
  }
  return stats;
}

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
    threadStats,
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
