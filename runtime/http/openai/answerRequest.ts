// An OpenAI request answered: shed, checked, planned, its choices generated on the cluster together, the answer streamed or whole.
import type { Request, Response } from 'express';
import { chatRequestSchema } from '../../../shared/api/openai.ts';
import { completionRequestSchema } from '../../../shared/api/openaiCompletions.ts';
import { TokenRouterError } from '../../errors.ts';
import { keyMeterOf } from '../apiKeyGuard.ts';
import type { Drain } from '../drain.ts';
import { LoadShedder } from '../loadShedder.ts';
import type { ServerMetrics } from '../metrics.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import { parseBody } from '../zodToError.ts';
import { answerStream } from './answerStream.ts';
import { answerUnary } from './answerUnary.ts';
import { checkPlanConstraint } from './constraintCheck.ts';
import { planRequest, type Kind } from './requestPlan.ts';

/** The handler of /v1/completions and /v1/chat/completions; its errors go to the error middleware (Express 5 forwards a rejected handler). */
export function answerRequest(service: TokenRouterService, metrics: ServerMetrics, drain?: Drain): (kind: Kind, req: Request, res: Response) => Promise<void> {
  // with scheduling.slo's queueing-delay bound, a request predicted to wait past it is refused (and counted in /metrics)
  const bound = service.config.scheduling.slo?.maxQueueDelayMs;
  const shedder = bound === undefined ? null : new LoadShedder(service.cluster, bound, 10_000, () => metrics.shed.inc());
  if (shedder) service.trace.subscribe(shedder.onEvent);
  return async (kind, req, res) => {
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
  };
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
