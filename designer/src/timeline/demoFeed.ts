// Demo feed: replays generated traces in real time through the same handlers as the live WebSocket (no server needed).
import type { TraceEvent } from '../../../shared/trace.ts';
import { generateTrace } from '../../../shared/timeline/generateTrace.ts';
import type { FeedConnection, FeedHandlers } from './feed.ts';
import { emissionTime } from './parseTrace.ts';

export interface DemoOptions {
  /** Target events per second delivered to the page. */
  rate?: number;
  algorithm?: 'r2r' | 'me';
  /** Delivery tick (ms): the server batches events the same way. */
  tickMs?: number;
}

/** Feeds endless synthetic traffic: each chunk of generated trace is time-scaled to reach `rate` events/s. */
export function startDemoFeed(handlers: FeedHandlers, opts: DemoOptions = {}): FeedConnection {
  const rate = opts.rate ?? 2000;
  const tickMs = opts.tickMs ?? 50;
  let chunkNo = 0;
  let queue: TraceEvent[] = [];
  let qi = 0;
  let t0 = 0;
  let speed = 1;
  const nextChunk = (): void => {
    const raw = generateTrace({ algorithm: opts.algorithm ?? 'r2r', targetEvents: 40_000, concurrency: 24, seed: 100 + chunkNo, t0, changeConfigAt: chunkNo === 0 ? t0 + 4000 : undefined });
    const prefix = `c${chunkNo}-`;
    // Fresh request ids per chunk, as a long-running server would have.
    queue = raw.filter((e) => chunkNo === 0 || e.type !== 'config').map((e) => {
      if (e.type === 'batch') return { ...e, requestIds: e.requestIds.map((r) => prefix + r) };
      if ('requestId' in e) return { ...e, requestId: prefix + e.requestId };
      return e;
    });
    qi = 0;
    const end = emissionTime(queue[queue.length - 1]);
    // The chunk's own rate (events per trace-second) sets how fast trace time must run to deliver `rate`.
    const native = (queue.length / Math.max(1, end - t0)) * 1000;
    speed = Math.max(0.05, rate / native);
    t0 = end + 5;
    chunkNo++;
  };
  nextChunk();
  // Trace time = start + (wall time since start) * speed.
  let traceStart = emissionTime(queue[0]);
  let wallBase = performance.now();
  const now = (): number => traceStart + (performance.now() - wallBase) * speed;
  handlers.onStatus('open', 'demo');
  handlers.onSnapshot([], now());
  const lastQueue = new Map<string, number>();
  const lastBatch = new Map<string, number>();
  let lastStats = 0;
  const timer = setInterval(() => {
    const tNow = now();
    const out: TraceEvent[] = [];
    while (true) {
      if (qi >= queue.length) {
        const at = now();
        nextChunk();
        // Keep time continuous across chunks even though the speed factor changes.
        traceStart = at;
        wallBase = performance.now();
      }
      const e = queue[qi];
      if (emissionTime(e) > tNow) break;
      out.push(e);
      qi++;
      if (e.type === 'queue') lastQueue.set(e.model, e.length);
      if (e.type === 'batch') lastBatch.set(e.model, e.requestIds.length);
    }
    if (out.length) handlers.onEvents(out);
    if (performance.now() - lastStats > 500) {
      lastStats = performance.now();
      handlers.onStats({
        now: tNow,
        models: [...lastBatch.keys()].map((name) => ({
          name, running: lastBatch.get(name) ?? 0, waiting: lastQueue.get(name) ?? 0, pendingReturn: 0,
          kvBytes: (lastBatch.get(name) ?? 0) * 96 * 1024 * 64,
        })),
      });
    }
  }, tickMs);
  return { close: () => clearInterval(timer) };
}
