// Demo feed: a simulated runtime in a worker whose messages go through the same parsing and validation as the /live WebSocket.
import { createMessageHandler, type FeedConnection, type FeedHandlers } from './feedMessages.ts';

export interface DemoOptions {
  /** Target events per second delivered to the page. */
  rate?: number;
  algorithm?: 'r2r' | 'me';
  /** Delivery tick (ms): the server batches events the same way. */
  tickMs?: number;
}

export function startDemoFeed(handlers: FeedHandlers, opts: DemoOptions = {}): FeedConnection {
  const worker = new Worker(new URL('./demoWorker.ts', import.meta.url), { type: 'module' });
  const onMessage = createMessageHandler(handlers);
  worker.onmessage = (e: MessageEvent<string>) => onMessage(e.data);
  worker.onerror = (e) => handlers.onStatus('error', `demo worker: ${e.message}`);
  handlers.onStatus('open', 'demo');
  worker.postMessage({ rate: opts.rate ?? 2000, tickMs: opts.tickMs ?? 50, algorithm: opts.algorithm ?? 'r2r' });
  return { close: () => worker.terminate() };
}
