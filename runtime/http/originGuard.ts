// Same-origin and Host guards: browsers on other sites (or on rebound DNS names) may send requests here, but only the server's own pages and non-browser clients are served.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { TokenRouterError } from '../errors.ts';
import { sendError } from './httpErrors.ts';

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
    // URL lowercases the host; Host names are case-insensitive (RFC 9110 §4.2.3).
    return new URL(origin).host !== req.headers.host?.toLowerCase();
  } catch {
    return true;
  }
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Refuses state-changing requests from foreign origins before their body is even read. */
export function refuseForeignOrigin(req: Request, res: Response, next: NextFunction): void {
  if (SAFE.has(req.method) || !isForeignOrigin(req)) return next();
  res.status(403).json({
    error: {
      message: `cross-origin requests are refused: Origin ${req.headers.origin} is not this server`,
      type: 'invalid_request_error',
      param: null,
      code: 'forbidden_origin',
    },
  });
}

/** The names a `Host` header may carry besides loopback names and IP literals. */
export interface HostPolicy {
  names: ReadonlySet<string>;
  /** From entries with a leading dot: the name itself and every subdomain. */
  suffixes: readonly string[];
}

export function hostPolicy(boundHost: string, allowedHosts: readonly string[]): HostPolicy {
  const names = new Set<string>();
  const suffixes: string[] = [];
  for (const raw of [boundHost, ...allowedHosts]) {
    const h = normalise(raw.startsWith('[') ? raw.slice(1, -1) : raw);
    if (h.startsWith('.')) suffixes.push(h.slice(1));
    else if (h) names.add(h);
  }
  return { names, suffixes };
}

function normalise(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

/**
 * True when `Host` names this server. Origin checks alone let DNS rebinding through: a page on
 * attacker.example whose name now resolves to 127.0.0.1 is same-origin with itself, so Origin and
 * Host agree. Its requests still carry `Host: attacker.example`, which is what is refused here, as
 * Vite and webpack-dev-server do since their rebinding advisories. IP literals are always allowed:
 * a rebinding page is always reached by a name, and a browser that typed the IP is same-origin
 * with the server. No Host at all is a non-browser HTTP/1.0 client (Node refuses HTTP/1.1 without it).
 */
export function isAllowedHost(header: string | undefined, policy: HostPolicy): boolean {
  if (header === undefined) return true;
  let name: string;
  if (header.startsWith('[')) {
    const end = header.indexOf(']');
    if (end < 0) return false;
    name = header.slice(1, end);
    return net.isIPv6(name) && /^(:\d{1,5})?$/.test(header.slice(end + 1));
  }
  const m = /^([^:]+)(:\d{1,5})?$/.exec(header);
  if (!m) return false;
  name = normalise(m[1]);
  if (net.isIPv4(name) || name === 'localhost' || name.endsWith('.localhost')) return true;
  return policy.names.has(name) || policy.suffixes.some((s) => name === s || name.endsWith(`.${s}`));
}

export function hostRefusal(header: string | undefined): TokenRouterError {
  return new TokenRouterError(
    'forbidden_host',
    `Host ${JSON.stringify(header)} is not a name this server answers to (loopback names, IP addresses and the configured host and allowedHosts are); add it to allowedHosts in the config if it is yours`,
    'Host',
  );
}

/** Refuses every request, reads included (the trace carries generated text), whose Host is not this server. */
export function refuseForeignHost(policy: HostPolicy) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (isAllowedHost(req.headers.host, policy)) return next();
    sendError(res, hostRefusal(req.headers.host));
  };
}
