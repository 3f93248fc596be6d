// Bearer-token guard for admin endpoints and the live feed; loopback dev mode lets local calls through.
import crypto from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { ServerConfig } from '../config/serverConfig.ts';

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

export function authRequired(config: ServerConfig): boolean {
  return !(config.dev && isLoopbackHost(config.host));
}

/** Compared as SHA-256 digests: equal lengths whatever was sent, so neither the time nor an early length check tells the token's length. */
export function tokenMatches(expected: string, given: string | undefined | null): boolean {
  if (!given) return false;
  const digest = (t: string) => crypto.createHash('sha256').update(t, 'utf8').digest();
  return crypto.timingSafeEqual(digest(expected), digest(given));
}

export function bearerOf(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  return m?.[1].trim();
}

export function requireAdmin(config: ServerConfig, token: string) {
  const required = authRequired(config);
  return (req: Request, res: Response, next: NextFunction) => {
    if (!required || tokenMatches(token, bearerOf(req.headers.authorization))) return next();
    res
      .status(401)
      .set('WWW-Authenticate', 'Bearer')
      .json({
        error: {
          message: 'admin endpoints need Authorization: Bearer <admin token> (printed at server start)',
          type: 'authentication_error',
          param: null,
          code: 'unauthorized',
        },
      });
  };
}
