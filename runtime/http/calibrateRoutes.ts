// Admin API for calibration: POST /admin/calibrate chooses a built-in's threshold for a target share of tokens on one model, each trial an evaluation run on the served models.
import { Router } from 'express';
import { CALIBRATABLE, CALIBRATE_BOUNDS, calibrateRequestSchema, type CalibrateResponse } from '../../shared/api/calibrate.ts';
import type { EvaluateEvent, EvaluationResult } from '../../shared/api/evaluate.ts';
import { TokenRouterError } from '../errors.ts';
import { calibrateThreshold } from '../eval/calibrateThreshold.ts';
import type { EvaluationRuns } from '../eval/evaluateDraft.ts';
import { parseBody } from './zodToError.ts';

export function calibrateRoutes(runs: EvaluationRuns): Router {
  const r = Router();

  r.post('/admin/calibrate', async (req, res) => {
    const body = parseBody(calibrateRequestSchema, req.body);
    const space = CALIBRATABLE[body.builtin];
    if (!space)
      throw new TokenRouterError(
        'invalid_request',
        `builtin: "${body.builtin}" has no threshold to calibrate; one of ${Object.keys(CALIBRATABLE).join(', ')}`,
        'builtin',
      );
    const client = body.client ?? `calibrate:${req.socket.remoteAddress ?? 'unknown'}`;
    const problems = body.problems ?? Math.min(CALIBRATE_BOUNDS.defaultProblems, runs.validationSet(body.task).length);
    const base = { builtin: body.builtin, task: body.task, problems, concurrency: body.concurrency, maxTokens: body.maxTokens, client };
    // Checked before any trial: the built-in deploys here and serves the model whose share is the target.
    const probe = runs.target({ ...base, params: body.params });
    if (!probe.algorithm.models.includes(body.model)) {
      throw new TokenRouterError('invalid_request', `model: ${body.builtin} runs on ${probe.algorithm.models.join(', ')}, not "${body.model}"`, 'model');
    }
    let cancel: (() => void) | null = null;
    let gone = false;
    res.on('close', () => {
      gone = !res.writableFinished;
      if (gone) cancel?.();
    });
    const measure = (value: number) =>
      new Promise<{ share: number; accuracy: number }>((resolve, reject) => {
        if (gone) return reject(new TokenRouterError('cancelled', 'the client went away', null));
        const params = { ...body.params, [space.param]: value };
        const onEvent = (e: EvaluateEvent) => {
          if (e.type === 'result') resolve(shareOf(e.result, body.model));
          else if (e.type === 'cancelled') reject(new TokenRouterError('cancelled', 'calibration cancelled', null));
          else if (e.type === 'error') reject(new TokenRouterError('internal', `a calibration trial failed: ${e.message}`, null));
        };
        try {
          cancel = runs.start(runs.target({ ...base, params }), { ...base, params }, client, onEvent).cancel;
        } catch (e) {
          reject(e);
        }
      });
    const c = await calibrateThreshold(space, body.target, body.iterations ?? CALIBRATE_BOUNDS.defaultIterations, measure);
    res.json({ builtin: body.builtin, param: space.param, model: body.model, target: body.target, problems, ...c } satisfies CalibrateResponse);
  });

  return r;
}

const shareOf = (r: EvaluationResult, model: string) => ({ share: r.tokenShare[model] ?? 0, accuracy: r.accuracy });
