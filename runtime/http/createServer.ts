// Assembles the HTTP server: OpenAI API, admin API, metrics, live feed and the web app, with errors in one place.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import type { WebSocketServer } from 'ws';
import type { TokenRouterService } from './tokenRouterService.ts';
import { requireAdmin } from './adminAuth.ts';
import { accessLog } from './accessLog.ts';
import { apiKeyGuardFor } from './apiKeyGuard.ts';
import { entryProfileOf } from '../eval/entryProfile.ts';
import { adminRoutes } from './adminRoutes.ts';
import { Drain, type DrainReport } from './drain.ts';
import { healthRoutes } from './healthRoutes.ts';
import { errorMiddleware } from './httpErrors.ts';
import { jsonBody } from './jsonBody.ts';
import { attachLiveFeed } from './liveFeed.ts';
import { ServerMetrics } from './metrics.ts';
import { openaiRoutes } from './openaiRoutes.ts';
import { answerHalfClosed, applyConnectionLimits, serverOptions } from './connectionLimits.ts';
import { hostPolicy, refuseForeignHost, refuseForeignOrigin } from './originGuard.ts';

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
  const page = (file: string) => (_req: express.Request, res: express.Response) => {
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
