// The HTTP server: the JSON body reader, the OpenAI routes, admin API, metrics, live feed and the web app, with errors in one place.
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { WebSocketServer } from 'ws';
import { entryProfileOf } from '../eval/entryProfile.ts';
import { TokenRouterError } from '../errors.ts';
import { accessLog } from './accessLog.ts';
import { requireAdmin } from './adminAuth.ts';
import { adminRoutes } from './adminRoutes.ts';
import { apiKeyGuardFor } from './apiKeyGuard.ts';
import { answerHalfClosed, applyConnectionLimits, serverOptions } from './connectionLimits.ts';
import { Drain, type DrainReport } from './drain.ts';
import { healthRoutes } from './healthRoutes.ts';
import { errorMiddleware, sendError } from './httpErrors.ts';
import { attachLiveFeed } from './liveFeed.ts';
import { ServerMetrics } from './metrics.ts';
import { answerRequest } from './openai/answerRequest.ts';
import { hostPolicy, refuseForeignHost, refuseForeignOrigin } from './originGuard.ts';
import type { TokenRouterService } from './tokenRouterService.ts';

export const WEB_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../designer/dist');

export interface RunningServer {
  server: http.Server;
  wss: WebSocketServer;
  url: string;
  /** Graceful stop, first half: refuse new requests, give running ones `graceMs`, end the rest; then call close(). */
  drain(graceMs: number): Promise<DrainReport>;
  /** Cuts a drain's grace period short (a second signal). */
  endDrainNow(): void;
  close(): Promise<void>;
}

/** `host`: the address the server listens on, which may differ from the configured one. */
export async function startServer(service: TokenRouterService, port = service.config.port, host = service.config.host): Promise<RunningServer> {
  const { config } = service;
  const app = express();
  const metrics = new ServerMetrics(service);
  const drain = new Drain();
  app.disable('x-powered-by');
  if (config.accessLog) app.use(accessLog());
  app.use(refuseForeignHost(hostPolicy(host, [config.host, ...config.allowedHosts])), refuseForeignOrigin, drain.gate, answerHalfClosed);
  // Server-Timing's receipt stamp; the entry's own time per request only while an evaluation or a prediction check needs it (runtime/eval/entryProfile.ts)
  app.use('/v1', entryProfileOf(service).middleware);
  app.use(jsonBody(config.limits.maxBodyBytes));
  app.use(healthRoutes(service, drain));
  app.get('/metrics', async (_req, res) => void res.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  const keyGuard = apiKeyGuardFor(service, metrics);
  if (keyGuard) app.use('/v1', keyGuard.middleware);
  app.use(openaiRoutes(service, metrics, drain));
  app.use('/admin', requireAdmin(config, service.adminToken));
  app.use(adminRoutes(service));
  const page = (file: string) => (_req: Request, res: Response) => {
    const p = path.join(WEB_DIST, file);
    if (fs.existsSync(p)) return res.sendFile(p);
    res.status(503).type('text').send('The web app is not built yet: run `npm run build:web` (npm start does it for you).');
  };
  app.get('/', page('index.html'));
  app.get('/timeline', page('timeline.html'));
  app.use(express.static(WEB_DIST, { index: false, dotfiles: 'deny', fallthrough: true }));
  app.use((req, res) => {
    res.status(404).json({ error: { message: `no route ${req.method} ${req.path}`, type: 'invalid_request_error', param: null, code: 'not_found' } });
  });
  app.use(errorMiddleware);

  const server = http.createServer(serverOptions(config.limits), app);
  applyConnectionLimits(server, config.limits);
  const wss = attachLiveFeed(server, service, host);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    wss,
    url: `http://${shownHost}:${(server.address() as { port: number }).port}`,
    drain: (graceMs) => drain.drain(graceMs),
    endDrainNow: () => drain.endNow(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Far above any body this server takes (an IR document nests ~6 levels, a chat request ~4), far
 * below where recursive code meets the stack: V8's JSON.parse is iterative, but JSON.stringify,
 * zod and the IR compiler recurse, and 20,000 nested arrays in `tokenrouter_ir` overflowed
 * JSON.stringify in the draft cache (a 500 anyone reaching /v1 could cause).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * express.json for every body whatever its Content-Type (clients such as `curl -d` send a form
 * type), strict (an object or an array), within `limitBytes`; its errors carry a status and a
 * `type` that httpErrors.ts answers. Then the bounds check, before any route sees the body.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    express.json({
      limit: limitBytes,
      strict: true,
      type: () => true,
      // JSON must be UTF-8 (RFC 8259): decoded, invalid bytes would become U+FFFD and the model would answer a prompt the client never sent
      verify: (_req, _res, buf, encoding) => {
        if (/^utf-?8$/i.test(encoding) && !isUtf8(buf))
          throw Object.assign(new Error('request body is not valid UTF-8'), { status: 400, type: 'encoding.invalid' });
      },
    }),
    (req, _res, next) => next(boundsViolation(req.body) ?? undefined),
  ];
}

/**
 * Where a body breaks a bound, and how; null when it keeps them. Iterative, so its own depth costs
 * no stack. JSON.parse makes `"__proto__"` an own key, but copying it into a fresh object by
 * assignment (as zod's records do) sets the copy's prototype instead, so the key vanished without a
 * word (`params: {"__proto__": …}` was stored as `{}`); no body here has a use for the name.
 */
function boundsViolation(body: unknown): TokenRouterError | null {
  const stack: [object, (string | number)[]][] = typeof body === 'object' && body !== null ? [[body, []]] : [];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (path.length >= MAX_JSON_DEPTH) {
      // The top-level field names the culprit, as a schema error would; the full path would be as deep as the body.
      const param = Array.isArray(body) ? null : String(path[0]);
      return new TokenRouterError('invalid_request', `request body nests deeper than ${MAX_JSON_DEPTH} levels${param === null ? '' : ` (in ${param})`}`, param);
    }
    const push = (child: unknown, key: string | number) => {
      if (typeof child === 'object' && child !== null) stack.push([child, [...path, key]]);
    };
    if (Array.isArray(value)) {
      value.forEach(push);
      continue;
    }
    for (const key of Object.keys(value)) {
      if (key === '__proto__') {
        const param = [...path, key].join('.');
        return new TokenRouterError('invalid_request', `unsupported parameter: ${param} (a key named __proto__ is refused anywhere in a body)`, param);
      }
      push((value as Record<string, unknown>)[key], key);
    }
  }
  return null;
}

/** The OpenAI-compatible endpoints: /v1/models, /v1/completions, /v1/chat/completions (answered by openai/answerRequest.ts). */
function openaiRoutes(service: TokenRouterService, metrics: ServerMetrics, drain?: Drain): Router {
  const r = Router();
  const created = Math.floor(Date.now() / 1000);
  const modelObject = (id: string) => ({ id, object: 'model', created, owned_by: 'tokenrouter' });
  const answer = answerRequest(service, metrics, drain);

  r.get('/v1/models', (_req, res) => {
    res.json({ object: 'list', data: service.algorithms.modelIds().map(modelObject) });
  });
  r.get('/v1/models/:id', (req, res) => {
    const id = String(req.params.id);
    const ids = service.algorithms.modelIds();
    if (!ids.includes(id)) throw new TokenRouterError('not_found', `The model \`${id.slice(0, 200)}\` does not exist. Available: ${ids.join(', ')}`, 'model');
    res.json(modelObject(id));
  });
  r.post('/v1/completions', (req, res) => answer('completion', req, res));
  r.post('/v1/chat/completions', (req, res) => answer('chat', req, res));
  // Another method on a known route is 405 naming the one that works (as vLLM answers), not a 404 that suggests a wrong path.
  for (const [path, allow] of [
    ['/v1/completions', 'POST'],
    ['/v1/chat/completions', 'POST'],
    ['/v1/models', 'GET'],
    ['/v1/models/:id', 'GET'],
  ] as const) {
    r.all(path, (req, res) => {
      res.set('Allow', allow);
      sendError(res, new TokenRouterError('method_not_allowed', `${req.method} is not allowed on ${req.path}: use ${allow}`, null));
    });
  }

  return r;
}
