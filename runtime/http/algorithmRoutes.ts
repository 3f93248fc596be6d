// Admin API for the algorithm registry: list, deploy (replace only when asked), activate, roll back, delete.
import { Router } from 'express';
import {
  activateRequestSchema,
  deployRequestSchema,
  type ActiveVersion,
  type AlgorithmList,
  type DeleteResponse,
  type AlgorithmSpec,
  type DeployResponse,
  type VersionView,
} from '../../shared/api/admin.ts';
import { TokenRouterError } from '../errors.ts';
import type { AlgorithmVersion } from '../registry/algorithmRegistry.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import { parseBody } from './zodToError.ts';

export function algorithmRoutes(service: TokenRouterService): Router {
  const r = Router();
  r.get('/admin/algorithms', (_req, res) => {
    res.json({
      algorithms: service.registry.list().map((e) => ({
        name: e.name,
        activeVersion: e.activeVersion,
        rollbackTo: service.registry.rollbackTarget(e.name),
        isDefault: e.name === service.config.defaultAlgorithm,
        served: e.activeVersion !== null && !service.info(e.name) && service.algorithms.serving(e.name, true) !== null,
        versions: e.versions.map(versionView),
      })),
    } satisfies AlgorithmList);
  });

  r.post('/admin/algorithms/:name/versions', (req, res) => {
    const body = parseBody(deployRequestSchema, req.body);
    const name = String(req.params.name);
    // A model's name is its own: an algorithm named so would shadow it in /v1/models and in requests.
    if (service.info(name))
      throw new TokenRouterError('conflict', `"${name}" is the name of a model this server serves; an algorithm cannot take it (choose another name)`, 'name');
    const spec: AlgorithmSpec = 'ir' in body ? { kind: 'ir', ir: body.ir } : { kind: 'builtin', factory: body.builtin, params: body.params };
    // Proven before storing (compiled, and its models served here): a stored version always loads.
    service.algorithms.deployable(spec);
    const existing = service.registry.get(name);
    if (existing && body.replace !== true) {
      const active = existing.activeVersion === null ? 'none active' : `v${existing.activeVersion} active`;
      throw new TokenRouterError(
        'conflict',
        `algorithm "${name}" already exists (${active}, ${existing.versions.length} version${existing.versions.length === 1 ? '' : 's'}); pass replace: true to store this as its next version, or choose another name`,
        'name',
      );
    }
    const v = service.registry.createVersion(name, spec, { activate: body.activate === true });
    // What runs changed (or may): operators read it in the server's log, not only in the designer.
    log(`deployed ${name} v${v.version} (${spec.kind === 'ir' ? 'graph' : `built-in ${spec.factory}`})${body.activate === true ? ', now active' : ''}`);
    res.status(201).json({ name: v.name, version: v.version, activeVersion: service.registry.get(name)!.activeVersion } satisfies DeployResponse);
  });

  r.delete('/admin/algorithms/:name', (req, res) => {
    const name = String(req.params.name);
    const deletedVersions = service.algorithms.deleteAlgorithm(name);
    log(`deleted ${name} (${deletedVersions} version${deletedVersions === 1 ? '' : 's'})`);
    res.json({ name, deletedVersions } satisfies DeleteResponse);
  });

  r.post('/admin/algorithms/:name/activate', (req, res) => {
    const { version } = parseBody(activateRequestSchema, req.body);
    const name = String(req.params.name);
    if (!service.registry.get(name)) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
    const stored = service.registry.version(name, version);
    if (stored) service.algorithms.deployable(stored.spec);
    service.registry.activate(name, version);
    log(`activated ${name} v${version}`);
    res.json({ name, activeVersion: version } satisfies ActiveVersion);
  });

  r.post('/admin/algorithms/:name/rollback', (req, res) => {
    const name = String(req.params.name);
    if (!service.registry.get(name)) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
    const activeVersion = service.registry.rollback(name);
    log(`rolled back ${name} to v${activeVersion}`);
    res.json({ name, activeVersion } satisfies ActiveVersion);
  });

  return r;
}

const log = (line: string): void => console.log(`[tokenrouter] ${line}`);

function versionView(v: AlgorithmVersion): VersionView {
  const at = { version: v.version, createdAt: v.createdAt };
  return v.spec.kind === 'ir' ? { ...at, kind: 'ir', ir: v.spec.ir } : { ...at, kind: 'builtin', factory: v.spec.factory, params: v.spec.params ?? {} };
}
