// Running a plan's choices together: start them all or none, and cancel them when the client hangs up.
import type { Response, Request } from 'express';
import type { GenerateHandle, GenerateSink } from '../generateParams.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import type { Drain } from '../drain.ts';
import type { ServerMetrics } from '../metrics.ts';
import type { Plan } from './requestPlan.ts';

/** What answering needs from the server: the service that generates and the metrics it reports to. */
export interface AnswerContext {
  service: TokenRouterService;
  metrics: ServerMetrics;
  /** The server's graceful stop, which ends a still-running answer at its deadline. */
  drain?: Drain;
  /** Each choice's completion tokens as it ends (cancelled and failed ones too: they were generated). */
  onCompletionTokens?: (n: number) => void;
  /** Streams' writes of one event-loop turn, flushed together at its end (answerStream's TurnFlush, one per server). */
  turns: { request(flush: () => void): void };
}

/** Starts every choice; if one is refused (429, 503, 404) the ones started are cancelled and the refusal thrown. */
export function startAll(service: TokenRouterService, plan: Plan, sinkFor: (k: number) => GenerateSink): GenerateHandle[] {
  const handles: GenerateHandle[] = [];
  try {
    plan.jobs.forEach((job, k) => handles.push(service.generate(job.params, sinkFor(k))));
  } catch (e) {
    for (const h of handles) h.cancel();
    throw e;
  }
  return handles;
}

/** Cancels the request everywhere (pending-return state included) when the client hangs up first. */
export function onClientGone(req: Request, res: Response, cancel: () => void): void {
  res.on('close', () => {
    if (!res.writableFinished) cancel();
  });
  req.on('aborted', cancel);
}
