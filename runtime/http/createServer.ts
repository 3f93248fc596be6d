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
import { errorMiddleware } from './httpErrors.ts';
import { jsonBody } from './jsonBody.ts';
import { attachLiveFeed } from './liveFeed.ts';
import { ServerMetrics } from './metrics.ts';
import { LoadShedder } from './loadShedder.ts';
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

/** `boundHost`: the address the server listens on, when it differs from the configured host. */
export function createApp(service: TokenRouterService, boundHost = service.config.host): { app: express.Express; metrics: ServerMetrics; drain: Drain } {
  const app = express();
  const metrics = new ServerMetrics(service);
  const drain = new Drain();
  app.disable('x-powered-by');
  if (service.config.accessLog) app.use(accessLog());
  app.use(refuseForeignHost(hostPolicy(boundHost, [service.config.host, ...service.config.allowedHosts])));
  app.use(refuseForeignOrigin);
  app.use(drain.gate);
  app.use(answerHalfClosed);
  // Server-Timing's receipt stamp; the entry's own time per request only while an evaluation or a prediction check needs it (runtime/eval/entryProfile.ts)
  app.use('/v1', entryProfileOf(service).middleware);
  app.use(jsonBody(service.config.limits.maxBodyBytes));
  // One reading of the models for both probes: /healthz's `ok` is every model serving (its status
  // with it), /health's 200 is the entry able to serve at all, so a load balancer keeps an entry
  // whose remote model is cut off while its local ones serve.
  const health = () => {
    const models = service.cluster.laneStats().map((l) => ({ name: l.name, down: service.cluster.engine(l.name)?.down ?? false }));
    const serving = !drain.active && models.some((m) => !m.down);
    return { ok: serving && !models.some((m) => m.down), serving, ...(drain.active ? { draining: true } : {}), models, memory: memoryReport(service) };
  };
  app.get('/healthz', (_req, res) => {
    const h = health();
    res.status(h.ok ? 200 : 503).json(h);
  });
  // vLLM's probe, empty body: 503 while draining or when no model can serve (a remote model cut off is not enough),
  // so a load balancer or Kubernetes can use it as is (/healthz keeps the per-model detail).
  app.get('/health', (_req, res) => {
    res.status(health().serving ? 200 : 503).end();
  });
  app.get('/metrics', async (_req, res, next) => {
    try {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    } catch (e) {
      next(e);
    }
  });
  const keyGuard = apiKeyGuardFor(service, metrics);
  if (keyGuard) app.use('/v1', keyGuard.middleware);
  app.use(openaiRoutes(service, metrics, shedderFor(service, metrics), drain));
  app.use('/admin', requireAdmin(service.config, service.adminToken));
  app.use(adminRoutes(service));
  const page = (file: string) => (_req: express.Request, res: express.Response) => {
    const p = path.join(WEB_DIST, file);
    if (!fs.existsSync(p)) {
      res.status(503).type('text').send('The web app is not built yet: run `npm run build:web` (npm start does it for you).');
      return;
    }
    res.sendFile(p);
  };
  app.get('/', page('index.html'));
  app.get('/timeline', page('timeline.html'));
  app.use(express.static(WEB_DIST, { index: false, dotfiles: 'deny', fallthrough: true }));
  app.use((req, res) => {
    res.status(404).json({ error: { message: `no route ${req.method} ${req.path}`, type: 'invalid_request_error', param: null, code: 'not_found' } });
  });
  app.use(errorMiddleware);
  return { app, metrics, drain };
}

/** The entry's load shedder when scheduling.slo sets a queueing-delay bound; its refusals count in /metrics. */
function shedderFor(service: TokenRouterService, metrics: ServerMetrics): LoadShedder | null {
  const bound = service.config.scheduling.slo?.maxQueueDelayMs;
  if (bound === undefined) return null;
  const shedder = new LoadShedder(service.cluster, bound, 10_000, () => metrics.shed.inc());
  service.trace.subscribe(shedder.onEvent);
  return shedder;
}

export async function startServer(service: TokenRouterService, port = service.config.port, host = service.config.host): Promise<RunningServer> {
  const { app, drain } = createApp(service, host);
  const server = http.createServer(serverOptions(service.config.limits), app);
  applyConnectionLimits(server, service.config.limits);
  const wss = attachLiveFeed(server, service, host);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as { port: number };
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    wss,
    url: `http://${shownHost}:${addr.port}`,
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

/** memory.budgetMiB's planned split beside the resident memory measured now (the KV a model holds is its pool's live bytes, prefix cache included). */
function memoryReport(service: TokenRouterService) {
  const { budgetBytes, baseBytes, headroomBytes, models } = service.memory;
  const lanes = new Map(service.cluster.laneStats().map((l) => [l.name, l]));
  return {
    budgetBytes,
    rssBytes: process.memoryUsage.rss(),
    baseBytes,
    headroomBytes,
    models: models.map((m) => ({
      name: m.name,
      weightBytes: m.weightBytes,
      workspaceBytes: m.workspaceBytes,
      kvBytes: m.kvBytes,
      kvTokens: m.kvTokens,
      kvUsedBytes: lanes.get(m.name)?.kvBytes ?? 0,
    })),
  };
}
