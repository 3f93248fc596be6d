// Admin API: models, status, thresholds, load generation and trace export, plus the algorithm registry (algorithmRoutes); bodies as shared/api/admin.ts defines them.
import { Router } from 'express';
import {
  loadRequestSchema,
  thresholdsRequestSchema,
  type LoadResponse,
  type ModelList,
  type StatusResponse,
  type ThresholdsResponse,
} from '../../shared/api/admin.ts';
import { toChromeTrace } from '../../shared/perfetto.ts';
import { TokenRouterError } from '../errors.ts';
import { LoadGenerator } from './loadGenerator.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import { algorithmRoutes } from './algorithmRoutes.ts';
import { evaluateRoutes } from './evaluateRoutes.ts';
import { parseBody } from './zodToError.ts';

/** A handler's throw reaches errorMiddleware (Express 5 forwards it), so handlers just throw TokenRouterError. */
export function adminRoutes(service: TokenRouterService): Router {
  const r = Router();
  const load = new LoadGenerator(service);
  r.use(algorithmRoutes(service));
  r.use(evaluateRoutes(service));

  r.get('/admin/models', (_req, res) => {
    res.json({
      models: service.algorithms.catalog().map((c) => {
        const info = service.info(c.name)!;
        const plan = service.memory.models.find((p) => p.name === c.name);
        return {
          name: c.name,
          vocabSize: info.vocabSize,
          heads: [...c.heads],
          maxContext: info.maxContext,
          kvBytesPerToken: info.kvBytesPerToken,
          memory: plan,
        };
      }),
    } satisfies ModelList);
  });

  r.get('/admin/status', (_req, res) => {
    const c = service.cluster;
    res.json({
      mode: c.mode,
      retainState: c.retainState,
      maxWaitMs: c.maxWaitMs,
      active: c.activeCount,
      queued: c.queuedCount,
      committed: c.committed,
      lanes: c.laneStats(),
      load: load.progress,
    } satisfies StatusResponse);
  });

  r.put('/admin/thresholds', (req, res) => {
    const body = parseBody(thresholdsRequestSchema, req.body);
    for (const k of Object.keys(body)) if (!service.cluster.engine(k)) throw new TokenRouterError('not_found', `no model named ${k}`, k);
    service.cluster.setThresholds(body);
    res.json({ thresholds: Object.fromEntries(service.cluster.laneStats().map((l) => [l.name, l.threshold])) } satisfies ThresholdsResponse);
  });

  r.post('/admin/load', (req, res) => {
    const body = parseBody(loadRequestSchema, req.body);
    service.algorithms.resolve(body.model ?? service.config.defaultAlgorithm);
    if (!load.start(body)) throw new TokenRouterError('overloaded', 'a load run is already going; wait for it to finish', null);
    res.status(202).json({ started: true, ...load.progress } satisfies LoadResponse);
  });

  r.get('/admin/trace', (req, res) => {
    const events = service.trace.events;
    if (req.query.format === 'jsonl') {
      res.type('application/x-ndjson').send(events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    } else {
      res.set('Content-Disposition', 'attachment; filename="tokenrouter-trace.json"').json(toChromeTrace(events));
    }
  });

  return r;
}
