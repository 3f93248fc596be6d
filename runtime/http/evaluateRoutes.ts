// Admin API for evaluating a draft before deploy: the run (NDJSON progress and result), its cancel, its predicted serving cost, and the live check after deploy.
import { Router, type Request } from 'express';
import {
  EVALUATE_BOUNDS,
  evaluateRequestSchema,
  taskRefSchema,
  PREDICT_LIVE_WINDOW_MS,
  predictRequestSchema,
  type CancelResponse,
  type EvaluateBounds,
  type EvaluateEvent,
  type Prediction,
  type PredictionCheck,
} from '../../shared/api/evaluate.ts';
import { TokenRouterError } from '../errors.ts';
import { entryProfileOf } from '../eval/entryProfile.ts';
import { EvaluationRuns } from '../eval/evaluateDraft.ts';
import { batchesIn, liveWindow } from '../eval/liveWindow.ts';
import { bundledTasks } from '../eval/loadTask.ts';
import { MAX_WINDOW_MS, PredictionChecks } from '../eval/predictionCheck.ts';
import { predictServing } from '../eval/predictServing.ts';
import type { TokenRouterService } from './tokenRouterService.ts';
import { calibrateRoutes } from './calibrateRoutes.ts';
import { parseBody } from './zodToError.ts';

/** Without a client id in the body, a caller is its address: one run at a time from there. */
const clientOf = (req: Request, named: string | undefined) => named ?? req.socket.remoteAddress ?? 'unknown';

export function evaluateRoutes(service: TokenRouterService): Router {
  const r = Router();
  const runs = new EvaluationRuns(service);
  const checks = new PredictionChecks(service, runs);
  // Calibration's trials are evaluation runs: the same bounds (one per client, two per server) hold.
  r.use(calibrateRoutes(runs));

  r.post('/admin/evaluate', (req, res) => {
    const body = parseBody(evaluateRequestSchema, req.body);
    const target = runs.target(body);
    // Every refusal above and in start() is an HTTP error; from here on the answer is a stream of events.
    let open = true;
    const write = (e: EvaluateEvent) => {
      if (!open) return;
      res.write(`${JSON.stringify(e)}\n`);
      if (e.type === 'result' || e.type === 'cancelled' || e.type === 'error') {
        open = false;
        res.end();
      }
    };
    const pending: EvaluateEvent[] = [];
    let started = false;
    const run = runs.start(target, body, clientOf(req, body.client), (e) => (started ? write(e) : pending.push(e)));
    res.status(200).set({ 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();
    started = true;
    for (const e of pending.splice(0)) write(e);
    // A client that goes away takes its run with it: nobody would read the result.
    res.on('close', () => {
      if (open) run.cancel();
      open = false;
    });
  });

  r.get('/admin/evaluate/bounds', (req, res) => {
    const ref = req.query.task === undefined ? undefined : taskRefSchema.safeParse(req.query.task);
    if (ref && !ref.success) throw new TokenRouterError('invalid_request', `task: ${ref.error.issues[0].message}`, 'task');
    const task = runs.task(ref?.data);
    const problems = task.split('validation').problems.length;
    const tasks = bundledTasks().map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}), grader: t.grader.kind }));
    res.json({
      task: task.header.name,
      tasks,
      problems,
      defaultProblems: Math.min(EVALUATE_BOUNDS.defaultProblems, problems),
      concurrency: runs.maxConcurrency(),
    } satisfies EvaluateBounds);
  });

  r.delete('/admin/evaluate/:runId', (req, res) => {
    const runId = String(req.params.runId);
    const cancelled = runs.cancel(runId);
    if (!cancelled && !runs.stored(runId))
      throw new TokenRouterError('not_found', `no evaluation ${runId} (runs are kept in memory: a restart forgets them)`, 'runId');
    res.json({ runId, cancelled } satisfies CancelResponse);
  });

  r.post('/admin/evaluate/:runId/predict', (req, res) => {
    const runId = String(req.params.runId);
    const body = parseBody(predictRequestSchema, req.body);
    const stored = runs.stored(runId);
    if (!stored) {
      if (runs.isRunning(runId)) throw new TokenRouterError('conflict', `evaluation ${runId} is still running: predict once it has finished`, 'runId');
      throw new TokenRouterError('not_found', `no finished evaluation ${runId} (runs are kept in memory: a restart forgets them)`, 'runId');
    }
    const c = service.cluster;
    const since = c.clock.now() - PREDICT_LIVE_WINDOW_MS;
    const ran = stored.batches.length ? { from: stored.batches[0].start, to: stored.batches[stored.batches.length - 1].end } : null;
    // the live traffic's batches (HTTP requests, whose entry work on the main thread slows the model threads) beside the run's own:
    // those the trace still holds, and those of the window before the run, taken when it started
    const live = liveWindow(stored.liveBefore, batchesIn(service.trace.events, since, ran), since);
    const entry = entryProfileOf(service).cost(PREDICT_LIVE_WINDOW_MS);
    const p = predictServing({
      routing: stored.result.routing,
      meanOutputTokens: stored.result.meanOutputTokens,
      concurrency: body.concurrency,
      lanes: c.engines.map((l) => ({ name: l.name, maxBatch: l.maxBatch, threshold: l.threshold })),
      maxWaitMs: c.maxWaitMs,
      batches: stored.batches,
      otherBatches: live,
      entryMs: entry?.perRequestMs ?? null,
      transitMs: stored.transitMs,
      clientMs: body.clientMs,
      slo: body.slo,
    });
    const liveBatches = Object.fromEntries(Object.keys(p.latencyBatches).map((m) => [m, live.filter((b) => b.model === m).length]));
    res.json({ runId, ...p, liveBatches } satisfies Prediction);
  });

  r.get('/admin/prediction-check', (req, res) => {
    const algorithm = typeof req.query.algorithm === 'string' ? req.query.algorithm : '';
    if (!algorithm) throw new TokenRouterError('invalid_request', 'algorithm: name the deployed algorithm to check (?algorithm=NAME)', 'algorithm');
    const raw = req.query.windowMs === undefined ? 30_000 : Number(req.query.windowMs);
    if (!Number.isInteger(raw) || raw < 1000 || raw > MAX_WINDOW_MS)
      throw new TokenRouterError('invalid_request', `windowMs: a whole number of ms from 1000 to ${MAX_WINDOW_MS}`, 'windowMs');
    res.json(checks.check(algorithm, raw) satisfies PredictionCheck);
  });

  return r;
}
