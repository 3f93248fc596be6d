// Connection-level bounds: how long a request may take to arrive, how many connections may be open, answers for clients that half-close, the end of a stream nobody reads.
import type http from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { ServerConfig } from '../config/serverConfig.ts';
import { TokenRouterError } from '../errors.ts';
import { toHttpError } from './httpErrors.ts';

/**
 * Options for http.createServer. `requestTimeout` covers receiving a request (headers and body)
 * only, so a slow body is cut with 408 while a long SSE response is not. Node checks it every
 * `connectionsCheckingInterval` (30 s by default, which let a one-byte-a-second body live 5 min
 * under the old 300 s default), so the interval follows the bound to keep the cut near it.
 */
export function serverOptions(limits: ServerConfig['limits']): http.ServerOptions {
  const bound = limits.bodyTimeoutMs;
  return {
    requestTimeout: bound,
    headersTimeout: Math.min(60_000, bound),
    connectionsCheckingInterval: Math.max(50, Math.min(2000, Math.floor(bound / 10))),
  };
}

/** Node has the flag but neither documents nor types it. */
type HalfOpenServer = http.Server & { httpAllowHalfOpen: boolean };

export function applyConnectionLimits(server: http.Server, limits: ServerConfig['limits']): void {
  server.maxConnections = limits.maxConnections;
  // By default Node aborts a request whose client sends FIN after it (`socket.end()`, `nc -N`,
  // some HTTP/1.0 clients), so such a client got no answer at all. Half-open keeps the response.
  (server as HalfOpenServer).httpAllowHalfOpen = true;
}

const PROBE_MS = 20;

/**
 * After a client's FIN the server cannot tell "waiting for the answer" from "gone" (a closed
 * socket and a half-closed one both send FIN). Until the response ends, a harmless write every
 * PROBE_MS tells them apart: a gone peer answers it with RST, the next write fails, the socket
 * closes and the request is cancelled as before; a half-closed peer reads 102 Processing (or an
 * SSE comment, or an NDJSON empty line, once a stream has started) and then its answer.
 */
export function answerHalfClosed(req: Request, res: Response, next: NextFunction): void {
  const socket = req.socket;
  let timer: NodeJS.Timeout | undefined;
  const probe = () => {
    if (res.writableEnded || socket.destroyed) return stop();
    if (!res.headersSent) res.writeProcessing();
    else if (String(res.getHeader('content-type') ?? '').startsWith('text/event-stream')) res.write(': \n\n');
    // NDJSON streams (/admin/evaluate) take an empty line, which their readers skip
    else if (String(res.getHeader('content-type') ?? '').startsWith('application/x-ndjson')) res.write('\n');
  };
  const onEnd = () => {
    if (timer) return;
    // The first probe at once: its RST makes the second one fail, so a gone client is seen in ~PROBE_MS.
    probe();
    timer = setInterval(probe, PROBE_MS);
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    socket.off('end', onEnd);
  };
  if (socket.readableEnded) onEnd();
  else socket.on('end', onEnd);
  res.once('close', stop);
  res.once('finish', stop);
  next();
}

/** How long a stream aborted for not reading may keep its buffer before its socket is destroyed. */
const CLOSE_GRACE_MS = 5000;

/**
 * Ends a stream whose client does not read (its request already cancelled), rather than pausing it:
 * the engine cannot hold one row of a batch back, so a pause would keep the request's slot and KV
 * for as long as the client stalls. The error event goes last into the buffer (a slow reader still
 * learns why); a stalled one is cut CLOSE_GRACE_MS later.
 */
export function endSlowClient(res: Response, bound: number, sse: (payload: unknown) => string): void {
  const why = `client not reading: ${res.writableLength} bytes of this stream unsent (limits.streamBufferBytes is ${bound}); the request was cancelled`;
  res.end(sse(toHttpError(new TokenRouterError('cancelled', why, null)).body));
  const cut = setTimeout(() => res.destroy(), CLOSE_GRACE_MS);
  cut.unref();
  res.once('close', () => clearTimeout(cut));
}
