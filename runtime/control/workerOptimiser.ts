// A ThresholdOptimiser that solves in a worker thread, for the live server.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTsWorker } from '../util/tsWorker.ts';
import type { OptimiserAnswer, ThresholdOptimiser } from './autoThresholds.ts';

export function workerOptimiser(): { optimise: ThresholdOptimiser; close: () => Promise<number> } {
  const worker = startTsWorker(path.join(path.dirname(fileURLToPath(import.meta.url)), 'optimiserWorker.ts'), null);
  worker.unref();
  const pending = new Map<number, { resolve: (a: OptimiserAnswer) => void; reject: (e: Error) => void }>();
  let seq = 0;
  worker.on('message', (m: { id: number; answer?: OptimiserAnswer; error?: string }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.answer) p.resolve(m.answer);
    else p.reject(new Error(m.error ?? 'optimiser failed'));
  });
  worker.on('error', (e) => {
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  });
  return {
    optimise: (input, current) =>
      new Promise<OptimiserAnswer>((resolve, reject) => {
        const id = ++seq;
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, input, current: [...current] });
      }),
    close: () => worker.terminate(),
  };
}
