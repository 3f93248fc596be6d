// The live feed: trace events and stats over WebSocket, batched, with a bounded number of clients and a bounded buffer per client.
import type { IncomingMessage, Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { LiveMessage } from '../../shared/api/live.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import { TokenRouterError } from '../errors.ts';
import { authRequired, bearerOf, tokenMatches } from './adminAuth.ts';
import { refuseUpgrade } from './httpErrors.ts';
import { hostPolicy, hostRefusal, isAllowedHost, isForeignOrigin } from './originGuard.ts';

const FLUSH_MS = 50;
const STATS_MS = 500;
const SNAPSHOT_EVENTS = 5000;
/** Messages a client may send in one second (a fixed window of INCOMING_WINDOW_MS) before it is closed 1008. */
const MAX_INCOMING_PER_SEC = 50;
const INCOMING_WINDOW_MS = 1000;
/** A client kept above half its buffer bound this long is not keeping up and is disconnected. */
const SLOW_GRACE_MS = 3000;
/** A close frame cannot reach a client that does not read; past this the socket is destroyed. */
const CLOSE_GRACE_MS = 1000;

export function attachLiveFeed(server: Server, service: TokenRouterService, boundHost = service.config.host): WebSocketServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const needAuth = authRequired(service.config);
  const hosts = hostPolicy(boundHost, [service.config.host, ...service.config.allowedHosts]);
  const { maxLiveClients, liveBufferBytes } = service.config.limits;
  /** Upgrades accepted but not yet open count too, or a burst of handshakes would pass the cap. */
  let clients = 0;

  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    if (!isAllowedHost(req.headers.host, hosts)) {
      refuseUpgrade(socket, hostRefusal(req.headers.host));
      return;
    }
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
    if (clients >= maxLiveClients) {
      refuseUpgrade(socket, new TokenRouterError('unavailable', `the live feed is full (${maxLiveClients} clients, limits.maxLiveClients); retry later`, null));
      return;
    }
    clients++;
    let counted = true;
    const release = () => {
      if (counted) clients--;
      counted = false;
    };
    socket.once('close', release);
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, service, liveBufferBytes));
  });
  return wss;
}

/**
 * Each client's unsent bytes are bounded: above half of `bound` its events are dropped and
 * counted (a brief stall costs some events, not memory); held there SLOW_GRACE_MS, or past
 * `bound`, it is disconnected with 1008 and a reason, and destroyed if the close cannot flush.
 * Before, a client that never read kept ~1 MiB and its snapshot buffered for as long as it
 * stayed connected: 100 of them cost 150 MB.
 */
function serve(ws: WebSocket, service: TokenRouterService, bound: number): void {
  const MAX_BUFFERED = bound >> 1;
  let slowSince: number | null = null;
  let dropping = false;
  const drop = (why: string) => {
    if (dropping) return;
    dropping = true;
    stop();
    ws.close(1008, why.slice(0, 120));
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  };
  /** False (and the client dropped) when it holds too much unsent data to be sent more. */
  const keepingUp = (): boolean => {
    const buffered = ws.bufferedAmount;
    if (buffered > bound) {
      drop(`client not reading: ${buffered} bytes unsent (limit ${bound})`);
      return false;
    }
    if (buffered <= MAX_BUFFERED) {
      slowSince = null;
      return true;
    }
    slowSince ??= Date.now();
    if (Date.now() - slowSince > SLOW_GRACE_MS) drop(`client too slow: over ${MAX_BUFFERED} bytes unsent for ${SLOW_GRACE_MS} ms`);
    return false;
  };
  const send = (m: LiveMessage) => ws.send(JSON.stringify(m));
  let pending: TraceEvent[] = [];
  let dropped = 0;
  let incoming = 0;
  let incomingSince = 0;
  // Subscribing first switches tracing on when this is the only reader, which emits the config in
  // force; the snapshot taken right after holds it (and whatever came before), so it is the first event.
  const unsubscribe = service.trace.subscribe((e) => {
    if (ws.bufferedAmount > MAX_BUFFERED) dropped++;
    else pending.push(e);
  });
  send({ type: 'snapshot', events: service.trace.recent(SNAPSHOT_EVENTS).slice(), now: service.cluster.clock.now() });
  pending = [];
  const flush = setInterval(() => {
    if (ws.readyState !== ws.OPEN) return;
    if (!keepingUp()) {
      dropped += pending.length;
      pending = [];
      return;
    }
    if (dropped > 0) {
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
    if (ws.readyState !== ws.OPEN || !keepingUp()) return;
    send({
      type: 'stats',
      now: service.cluster.clock.now(),
      models: service.cluster.laneStats().map((l) => ({
        name: l.name,
        running: l.running,
        waiting: l.waitingAdmission,
        pendingReturn: l.pendingReturn,
        kvBytes: l.kvBytes,
        threshold: l.threshold,
      })),
    });
  }, STATS_MS);
  ws.on('message', (data, isBinary) => {
    // The feed is one-way; anything a client sends gets a clear answer, and floods are cut off.
    // Counted over its own second, not the flush tick: reset at every FLUSH_MS flush, the cap would allow ~1,000 a second.
    const now = Date.now();
    if (now - incomingSince >= INCOMING_WINDOW_MS) {
      incomingSince = now;
      incoming = 0;
    }
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
    send({
      type: 'error',
      message: ok ? 'the live feed accepts no commands; it only streams events' : 'messages must be JSON text; this feed only streams events',
    });
  });
  function stop(): void {
    clearInterval(flush);
    clearInterval(stats);
    unsubscribe();
  }
  ws.on('close', stop);
  ws.on('error', stop);
}
