// Admin API: algorithm versions (deploy, activate, roll back, delete), models, thresholds, load generation, trace export; bodies as shared/api/admin.ts defines them.
import { Router } from 'express';
import {
  activateRequestSchema,
  deployRequestSchema,
  loadRequestSchema,
  thresholdsRequestSchema,
  type ActiveVersion,
  type AlgorithmList,
  type DeleteResponse,
  type DeployResponse,
  type LoadResponse,
  type ModelList,
  type StatusResponse,
  type ThresholdsResponse,
  type VersionView,
} from '../../shared/api/admin.ts';
import { toChromeTrace } from '../../shared/perfetto.ts';
import { TokenRouterError } from '../errors.ts';
import type { AlgorithmSpec, AlgorithmVersion } from '../registry/algorithmRegistry.ts';
import { LoadGenerator } from '../serve/loadGenerator.ts';
import type { TokenRouterService } from '../serve/tokenRouterService.ts';
import { sendError } from './httpErrors.ts';
import { parseBody } from './zodToError.ts';

export function adminRoutes(service: TokenRouterService): Router {
  const r = Router();
  const load = new LoadGenerator(service);
  const wrap =
    (fn: (req: import('express').Request, res: import('express').Response) => void) =>
    (req: import('express').Request, res: import('express').Response) => {
      try {
        fn(req, res);
      } catch (e) {
        sendError(res, e);
      }
    };

  r.get(
    '/admin/algorithms',
    wrap((_req, res) => {
      res.json({
        algorithms: service.registry.list().map((e) => ({
          name: e.name,
          activeVersion: e.activeVersion,
          rollbackTo: service.registry.rollbackTarget(e.name),
          isDefault: e.name === service.config.defaultAlgorithm,
          versions: e.versions.map(versionView),
        })),
      } satisfies AlgorithmList);
    }),
  );

  r.post(
    '/admin/algorithms/:name/versions',
    wrap((req, res) => {
      const body = parseBody(deployRequestSchema, req.body);
      const name = String(req.params.name);
      // A model's name is its own: an algorithm named so would shadow it in /v1/models and in requests.
      if (service.info(name)) throw new TokenRouterError('conflict', `"${name}" is the name of a model this server serves; an algorithm cannot take it (choose another name)`, 'name');
      const spec: AlgorithmSpec = 'ir' in body ? { kind: 'ir', ir: body.ir } : { kind: 'builtin', factory: body.builtin, params: body.params };
      // Proven before storing (compiled, and its models served here): a stored version always loads.
      service.deployable(spec);
      const existing = service.registry.get(name);
      if (existing && body.replace !== true) {
        const active = existing.activeVersion === null ? 'none active' : `v${existing.activeVersion} active`;
        throw new TokenRouterError('conflict', `algorithm "${name}" already exists (${active}, ${existing.versions.length} version${existing.versions.length === 1 ? '' : 's'}); pass replace: true to store this as its next version, or choose another name`, 'name');
      }
      const v = service.registry.createVersion(name, spec, { activate: body.activate === true });
      res.status(201).json({ name: v.name, version: v.version, activeVersion: service.registry.get(name)!.activeVersion } satisfies DeployResponse);
    }),
  );

  r.delete(
    '/admin/algorithms/:name',
    wrap((req, res) => {
      const name = String(req.params.name);
      res.json({ name, deletedVersions: service.deleteAlgorithm(name) } satisfies DeleteResponse);
    }),
  );

  r.post(
    '/admin/algorithms/:name/activate',
    wrap((req, res) => {
      const { version } = parseBody(activateRequestSchema, req.body);
      const name = String(req.params.name);
      if (!service.registry.get(name)) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
      const stored = service.registry.version(name, version);
      if (stored) service.deployable(stored.spec);
      service.registry.activate(name, version);
      res.json({ name, activeVersion: version } satisfies ActiveVersion);
    }),
  );

  r.post(
    '/admin/algorithms/:name/rollback',
    wrap((req, res) => {
      const name = String(req.params.name);
      if (!service.registry.get(name)) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
      res.json({ name, activeVersion: service.registry.rollback(name) } satisfies ActiveVersion);
    }),
  );

  r.get(
    '/admin/models',
    wrap((_req, res) => {
      res.json({
        models: service.catalog().map((c) => {
          const info = service.info(c.name)!;
          const plan = service.memoryPlan.find((p) => p.name === c.name);
          return { name: c.name, vocabSize: info.vocabSize, heads: [...c.heads], maxContext: info.maxContext, kvBytesPerToken: info.kvBytesPerToken, memory: plan };
        }),
      } satisfies ModelList);
    }),
  );

  r.get(
    '/admin/status',
    wrap((_req, res) => {
      const c = service.cluster;
      res.json({ mode: c.mode, retainState: c.retainState, maxWaitMs: c.maxWaitMs, active: c.activeCount, queued: c.queuedCount, committed: c.committed, lanes: c.laneStats(), load: load.progress } satisfies StatusResponse);
    }),
  );

  r.put(
    '/admin/thresholds',
    wrap((req, res) => {
      const body = parseBody(thresholdsRequestSchema, req.body);
      for (const k of Object.keys(body)) if (!service.cluster.engine(k)) throw new TokenRouterError('not_found', `no model named ${k}`, k);
      service.cluster.setThresholds(body);
      res.json({ thresholds: Object.fromEntries(service.cluster.laneStats().map((l) => [l.name, l.threshold])) } satisfies ThresholdsResponse);
    }),
  );

  r.post(
    '/admin/load',
    wrap((req, res) => {
      const body = parseBody(loadRequestSchema, req.body);
      service.resolve(body.model ?? service.config.defaultAlgorithm);
      if (!load.start(body)) throw new TokenRouterError('overloaded', 'a load run is already going; wait for it to finish', null);
      res.status(202).json({ started: true, ...load.progress } satisfies LoadResponse);
    }),
  );

  r.get(
    '/admin/trace',
    wrap((req, res) => {
      const events = service.trace.events;
      if (req.query.format === 'jsonl') {
        res.type('application/x-ndjson').send(events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      } else {
        res.set('Content-Disposition', 'attachment; filename="tokenrouter-trace.json"').json(toChromeTrace(events));
      }
    }),
  );

  return r;
}

function versionView(v: AlgorithmVersion): VersionView {
  const at = { version: v.version, createdAt: v.createdAt };
  return v.spec.kind === 'ir' ? { ...at, kind: 'ir', ir: v.spec.ir } : { ...at, kind: 'builtin', factory: v.spec.factory, params: v.spec.params ?? {} };
}
