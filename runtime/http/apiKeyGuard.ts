// The /v1 door once API keys are set: a key or the admin token as Bearer, compared over SHA-256 in constant time; per-key limits and counts.
import crypto from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { keyHash, sha256, type ApiKeyConfig } from '../config/apiKeyConfig.ts';
import { TokenRouterError } from '../errors.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import { authRequired, bearerOf } from './adminAuth.ts';
import { sendError } from './httpErrors.ts';
import type { ServerMetrics } from './metrics.ts';
import { MinuteWindow, resetText } from './minuteWindow.ts';

/** What a request admitted with a key reports back: the tokens it used, for the key's window and /metrics. */
export interface KeyMeter {
  charge(tokens: number, kind: 'prompt' | 'completion'): void;
}

interface Key {
  name: string;
  hash: Buffer;
  requests?: MinuteWindow;
  tokens?: MinuteWindow;
}

/** A /metrics label no key name can be (names are letters, digits, . _ -): refusals of an unknown or missing key. */
const UNKNOWN = '(none)';

export class ApiKeyGuard {
  private readonly keys: Key[];
  private readonly adminHash: Buffer;

  constructor(
    keys: readonly ApiKeyConfig[],
    adminToken: string,
    /** Admin needs no token here (dev mode on loopback): the server's own pages may use /v1 as they use admin. */
    private readonly adminOpen: boolean,
    private readonly metrics: ServerMetrics,
    now: () => number = Date.now,
  ) {
    this.keys = keys.map((k) => ({
      name: k.name,
      hash: keyHash(k),
      requests: k.requestsPerMinute === undefined ? undefined : new MinuteWindow(k.requestsPerMinute, now),
      tokens: k.tokensPerMinute === undefined ? undefined : new MinuteWindow(k.tokensPerMinute, now),
    }));
    this.adminHash = sha256(adminToken);
  }

  /**
   * The key a Bearer value is, "admin" for the admin token, null for neither. Hashes are compared,
   * so every comparison is over 32 bytes whatever was sent, and all of them are made, so the time
   * taken says neither which key matched nor how much of one a guess got right.
   */
  identify(given: string | undefined): Key | 'admin' | null {
    const h = sha256(given ?? '');
    let found: Key | null = null;
    for (const k of this.keys) if (crypto.timingSafeEqual(k.hash, h) && found === null) found = k;
    const admin = crypto.timingSafeEqual(this.adminHash, h);
    if (given === undefined) return null;
    return found ?? (admin ? 'admin' : null);
  }

  readonly middleware = (req: Request, res: Response, next: NextFunction): void => {
    const given = bearerOf(req.headers.authorization);
    const who = this.identify(given);
    if (who === 'admin') return next();
    if (who === null) {
      // Sec-Fetch-Site is set by the browser and cannot be set by a page: this is the designer's
      // playground on a server whose admin API is open to it anyway.
      if (this.adminOpen && req.headers['sec-fetch-site'] === 'same-origin') return next();
      this.metrics.keyRequests.inc({ key: UNKNOWN, outcome: 'invalid_api_key' });
      const message = given === undefined ? 'no API key: send Authorization: Bearer KEY (this server was started with API keys)' : 'incorrect API key provided';
      return sendError(res, new TokenRouterError('invalid_api_key', message, null));
    }
    const wait = Math.max(who.requests?.state().remaining === 0 ? who.requests.waitMs() : 0, who.tokens?.state().remaining === 0 ? who.tokens.waitMs() : 0);
    if (wait > 0) {
      this.setHeaders(res, who);
      this.metrics.keyRequests.inc({ key: who.name, outcome: 'rate_limited' });
      const which = who.requests?.state().remaining === 0 ? `${who.requests.limit} requests` : `${who.tokens!.limit} tokens`;
      return sendError(
        res,
        new TokenRouterError('rate_limit_exceeded', `API key "${who.name}" is limited to ${which} per minute; retry in ${Math.ceil(wait / 1000)} s`, null, {
          retry_after_s: Math.ceil(wait / 1000),
        }),
      );
    }
    who.requests?.add(1);
    this.metrics.keyRequests.inc({ key: who.name, outcome: 'accepted' });
    this.setHeaders(res, who);
    const meter: KeyMeter = {
      charge: (n, kind) => {
        if (n <= 0) return;
        who.tokens?.add(n);
        this.metrics.keyTokens.inc({ key: who.name, kind }, n);
      },
    };
    res.locals.keyMeter = meter;
    res.locals.apiKeyName = who.name;
    next();
  };

  private setHeaders(res: Response, k: Key): void {
    for (const [what, w] of [
      ['requests', k.requests],
      ['tokens', k.tokens],
    ] as const) {
      if (!w) continue;
      const s = w.state();
      res.set(`x-ratelimit-limit-${what}`, String(s.limit));
      res.set(`x-ratelimit-remaining-${what}`, String(s.remaining));
      res.set(`x-ratelimit-reset-${what}`, resetText(s.resetMs));
    }
  }
}

/** The guard when any key is set (config, --api-key, TOKENROUTER_API_KEY); none: /v1 stays open. */
export function apiKeyGuardFor(service: TokenRouterService, metrics: ServerMetrics): ApiKeyGuard | null {
  const keys = service.config.apiKeys;
  return keys.length === 0 ? null : new ApiKeyGuard(keys, service.adminToken, !authRequired(service.config), metrics);
}

/** The meter the guard left for this request (none when /v1 is open or the admin token was used). */
export function keyMeterOf(res: Response): KeyMeter | undefined {
  return res.locals.keyMeter as KeyMeter | undefined;
}
