// The live feed: trace events and stats over WebSocket, batched, with a bounded buffer per client.
import type { IncomingMessage, Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { LiveMessage } from '../../shared/api/live.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { TokenRouterService } from '../serve/tokenRouterService.ts';
import { authRequired, bearerOf, tokenMatches } from './adminAuth.ts';
import { isForeignOrigin } from './originGuard.ts';

const FLUSH_MS = 50;
const STATS_MS = 500;
/** Above this many unsent bytes a client is "slow": its events are dropped and counted, never queued. */
const MAX_BUFFERED = 1 << 20;
const SNAPSHOT_EVENTS = 5000;
const MAX_INCOMING_PER_SEC = 50;

export function attachLiveFeed(server: Server, service: TokenRouterService): WebSocketServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const needAuth = authRequired(service.config);

  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/live') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    if (isForeignOrigin(req)) {
      // The feed carries generated tokens; browsers let any page open a WebSocket anywhere.
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    if (needAuth && !tokenMatches(service.adminToken, url.searchParams.get('token') ?? bearerOf(req.headers.authorization))) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, service));
  });
  return wss;
}

function serve(ws: WebSocket, service: TokenRouterService): void {
  const send = (m: LiveMessage) => ws.send(JSON.stringify(m));
  let pending: TraceEvent[] = [];
  let dropped = 0;
  let incoming = 0;
  const events = service.trace.events;
  send({ type: 'snapshot', events: events.slice(Math.max(0, events.length - SNAPSHOT_EVENTS)), now: service.cluster.clock.now() });
  const unsubscribe = service.trace.subscribe((e) => {
    if (ws.bufferedAmount > MAX_BUFFERED) dropped++;
    else pending.push(e);
  });
  const flush = setInterval(() => {
    incoming = 0;
    if (ws.readyState !== ws.OPEN) return;
    if (dropped > 0 && ws.bufferedAmount <= MAX_BUFFERED) {
      send({ type: 'dropped', count: dropped });
      dropped = 0;
    }
    if (pending.length > 0) {
      const batch = pending;
      pending = [];
      send({ type: 'events', events: batch });
    }
  }, FLUSH_MS);
  const stats = setInterval(() => {
    if (ws.readyState !== ws.OPEN || ws.bufferedAmount > MAX_BUFFERED) return;
    send({
      type: 'stats',
      now: service.cluster.clock.now(),
      models: service.cluster.laneStats().map((l) => ({ name: l.name, running: l.running, waiting: l.waitingAdmission, pendingReturn: l.pendingReturn, kvBytes: l.kvBytes, threshold: l.threshold })),
    });
  }, STATS_MS);
  ws.on('message', (data, isBinary) => {
    // The feed is one-way; anything a client sends gets a clear answer, and floods are cut off.
    if (++incoming > MAX_INCOMING_PER_SEC) {
      ws.close(1008, 'too many messages');
      return;
    }
    const text = isBinary ? null : data.toString();
    let ok = false;
    try {
      ok = text !== null && typeof JSON.parse(text) === 'object';
    } catch {
      ok = false;
    }
    send({ type: 'error', message: ok ? 'the live feed accepts no commands; it only streams events' : 'messages must be JSON text; this feed only streams events' });
  });
  const stop = () => {
    clearInterval(flush);
    clearInterval(stats);
    unsubscribe();
  };
  ws.on('close', stop);
  ws.on('error', stop);
}
