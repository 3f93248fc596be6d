// The probes: /healthz (each model, the memory split) and vLLM's /health, from one reading of the models.
import { Router } from 'express';
import type { Drain } from './drain.ts';
import type { TokenRouterService } from './tokenRouterService.ts';

/**
 * /healthz's `ok` is every model serving (its status with it); /health's 200 is the entry able to
 * serve at all, so a load balancer keeps an entry whose remote model is cut off while its local ones
 * serve. /health answers with an empty body, as vLLM's, so a load balancer or Kubernetes can use it
 * as is.
 */
export function healthRoutes(service: TokenRouterService, drain: Drain): Router {
  const r = Router();
  const health = () => {
    const models = service.cluster.laneStats().map((l) => ({ name: l.name, down: service.cluster.engine(l.name)?.down ?? false }));
    const serving = !drain.active && models.some((m) => !m.down);
    return { ok: serving && !models.some((m) => m.down), serving, ...(drain.active ? { draining: true } : {}), models, memory: memoryReport(service) };
  };
  r.get('/healthz', (_req, res) => {
    const h = health();
    res.status(h.ok ? 200 : 503).json(h);
  });
  r.get('/health', (_req, res) => void res.status(health().serving ? 200 : 503).end());
  return r;
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
    models: models.map(({ name, weightBytes, workspaceBytes, kvBytes, kvTokens }) => ({
      name,
      weightBytes,
      workspaceBytes,
      kvBytes,
      kvTokens,
      kvUsedBytes: lanes.get(name)?.kvBytes ?? 0,
    })),
  };
}
