// OpenAI-compatible endpoints: /v1/models, /v1/completions, /v1/chat/completions (planned in openai/, answered unary or as SSE).
import { Router, type Request, type Response } from 'express';
import { chatRequestSchema, completionRequestSchema } from '../../shared/api/openai.ts';
import { TokenRouterError } from '../errors.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import type { Drain } from './drain.ts';
import { sendError } from './httpErrors.ts';
import { keyMeterOf } from './apiKeyGuard.ts';
import { LoadShedder } from './loadShedder.ts';
import type { ServerMetrics } from './metrics.ts';
import { answerStream } from './openai/answerStream.ts';
import { answerUnary } from './openai/answerUnary.ts';
import { planRequest, type Kind } from './openai/requestPlan.ts';
import { checkPlanConstraint } from './openai/constraintCheck.ts';
import { parseBody } from './zodToError.ts';

export function openaiRoutes(service: TokenRouterService, metrics: ServerMetrics, drain?: Drain): Router {
  const r = Router();
  const created = Math.floor(Date.now() / 1000);
  const modelObject = (id: string) => ({ id, object: 'model', created, owned_by: 'tokenrouter' });
  // with scheduling.slo's queueing-delay bound, a request predicted to wait past it is refused (and counted in /metrics)
  const bound = service.config.scheduling.slo?.maxQueueDelayMs;
  const shedder = bound === undefined ? null : new LoadShedder(service.cluster, bound, 10_000, () => metrics.shed.inc());
  if (shedder) service.trace.subscribe(shedder.onEvent);

  r.get('/v1/models', (_req, res) => {
    res.json({ object: 'list', data: service.algorithms.modelIds().map(modelObject) });
  });
  r.get('/v1/models/:id', (req, res) => {
    const id = String(req.params.id);
    const ids = service.algorithms.modelIds();
    if (!ids.includes(id)) throw new TokenRouterError('not_found', `The model \`${id.slice(0, 200)}\` does not exist. Available: ${ids.join(', ')}`, 'model');
    res.json(modelObject(id));
  });
  r.post('/v1/completions', (req, res) => handle('completion', req, res));
  r.post('/v1/chat/completions', (req, res) => handle('chat', req, res));
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

  /** Its errors go to the error middleware (Express 5 forwards a rejected handler). */
  async function handle(kind: Kind, req: Request, res: Response): Promise<void> {
    // Shed before parsing: a refused request costs the entry as little as possible.
    shedder?.check();
    const body = kind === 'chat' ? parseBody(chatRequestSchema, req.body) : parseBody(completionRequestSchema, req.body);
    const plan = planRequest(service, kind, body, requestIdOf(req));
    // compiled before queueing (cached per vocabulary and grammar): a schema the library cannot compile is the request's 400
    if (plan.constraint || plan.checks.length > 0) {
      await checkPlanConstraint(service, plan, body.tokenrouter_ir);
      // the client hung up while it compiled: nothing to answer
      if (res.writableEnded || res.destroyed) return;
    }
    res.set('X-Request-Id', plan.id);
    const meter = keyMeterOf(res);
    const ctx = { service, metrics, drain, onCompletionTokens: meter && ((n: number) => meter.charge(n, 'completion')) };
    if (body.stream) answerStream(ctx, plan, res, req, body.stream_options?.include_usage === true);
    else answerUnary(ctx, plan, res, req);
    // Charged once generation started: a request refused at the door (429, 503) used no tokens.
    meter?.charge(plan.promptTokens, 'prompt');
  }

  return r;
}

/** A client's X-Request-Id, as vLLM honours it: kept when it is a plain token, refused when it is not. */
function requestIdOf(req: Request): string | undefined {
  const v = req.headers['x-request-id'];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(v)) {
    throw new TokenRouterError('invalid_request', 'X-Request-Id must be 1 to 128 characters of letters, digits and . _ : -', 'X-Request-Id');
  }
  return v;
}
