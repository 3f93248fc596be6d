// Worker-thread side of the threshold optimiser: solving the throughput model never blocks serving.
import { parentPort } from 'node:worker_threads';
import type { OptimiserInput } from './autoThresholds.ts';
import { dtmcOptimiser } from './dtmcOptimiser.ts';

parentPort!.on('message', (m: { id: number; input: OptimiserInput; current: number[] }) => {
  try {
    parentPort!.postMessage({ id: m.id, answer: dtmcOptimiser(m.input, m.current) });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).message });
  }
});
