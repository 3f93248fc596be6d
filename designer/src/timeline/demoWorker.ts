// Demo "server" in a worker: an endless simulated runtime sending /live-shaped JSON messages at a target event rate.
import type { LiveMessage } from '../../../shared/api/live.ts';
import type { TraceEvent } from '../../../shared/trace.ts';
import { createTraceStream } from '../../../shared/timeline/generateTrace.ts';

const emission = (e: TraceEvent): number => (e.type === 'batch' ? e.end : e.t);

self.onmessage = (msg: MessageEvent<{ rate: number; tickMs: number; algorithm: 'r2r' | 'me' }>) => {
  const { rate, tickMs, algorithm } = msg.data;
  const sim = createTraceStream({ algorithm, endless: true, concurrency: 24, seed: 100, changeConfigAt: 4000 });
  // The simulation's own rate (events per trace-ms) sets how fast trace time must run to deliver `rate`.
  while (sim.buffer.length < 3000) sim.step();
  const first = emission(sim.buffer[0]);
  const native = sim.buffer.length / Math.max(1, emission(sim.buffer[sim.buffer.length - 1]) - first);
  // Trace time is compressed (or stretched) by `speed` and re-stamped so that the demo server's clock runs at wall speed, like a real one.
  const speed = rate / 1000 / native;
  const wallStart = performance.now();
  const now = (): number => first + (performance.now() - wallStart) * speed;
  const at = (t: number): number => first + (t - first) / speed;
  const restamp = (e: TraceEvent): TraceEvent => {
    switch (e.type) {
      case 'batch':
        return { ...e, start: at(e.start), end: at(e.end) };
      case 'request-end':
        return { ...e, t: at(e.t), admittedAt: at(e.admittedAt), firstTokenAt: e.firstTokenAt === null ? null : at(e.firstTokenAt) };
      default:
        return { ...e, t: at(e.t) };
    }
  };
  self.postMessage(JSON.stringify({ type: 'snapshot', events: [], now: at(now()) }));
  const lastQueue = new Map<string, number>();
  const lastBatch = new Map<string, number>();
  let lastStats = 0;
  setInterval(() => {
    const tNow = now();
    while (!sim.buffer.length || emission(sim.buffer[sim.buffer.length - 1]) <= tNow) sim.step();
    let k = 0;
    while (k < sim.buffer.length && emission(sim.buffer[k]) <= tNow) k++;
    const out = sim.buffer.splice(0, k);
    for (const e of out) {
      if (e.type === 'queue') lastQueue.set(e.model, e.length);
      else if (e.type === 'batch') lastBatch.set(e.model, e.requestIds.length);
    }
    if (out.length) self.postMessage(JSON.stringify({ type: 'events', events: out.map(restamp) }));
    if (performance.now() - lastStats > 500) {
      lastStats = performance.now();
      const stats: LiveMessage = {
        type: 'stats',
        now: at(tNow),
        models: [...lastBatch.keys()].map((name) => ({
          name,
          running: lastBatch.get(name) ?? 0,
          waiting: lastQueue.get(name) ?? 0,
          pendingReturn: 0,
          // Illustrative only: ~96 KiB of KV per token of a 64-token context per running row.
          kvBytes: (lastBatch.get(name) ?? 0) * 96 * 1024 * 64,
          threshold: 1,
        })),
      };
      self.postMessage(JSON.stringify(stats));
    }
  }, tickMs);
};
