// Same-origin guard: browsers on other sites may send requests here, but only the server's own pages and non-browser clients are served.
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

/**
 * True when a browser says the request comes from another site. Browsers send Origin on every
 * cross-origin POST and WebSocket, and a page can POST text/plain without a CORS preflight; the
 * JSON parser accepts any content type, so without this check any website a developer visits could
 * deploy, activate or load-test a dev-mode server (no token on loopback) and read the live feed.
 * Non-browser clients send no Origin; the server's own pages send its origin. "null" (sandboxed
 * frames, file://) counts as foreign.
 */
export function isForeignOrigin(req: Pick<IncomingMessage, 'headers'>): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Refuses state-changing requests from foreign origins before their body is even read. */
export function refuseForeignOrigin(req: Request, res: Response, next: NextFunction): void {
  if (SAFE.has(req.method) || !isForeignOrigin(req)) return next();
  res.status(403).json({ error: { message: `cross-origin requests are refused: Origin ${req.headers.origin} is not this server`, type: 'invalid_request_error', param: null, code: 'forbidden_origin' } });
}
