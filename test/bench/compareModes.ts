// TokenRouter mode with optimised thresholds, and its side-by-side comparison with the standard-serving baseline.
import type { RunnerSet } from './benchRunners.ts';
import { modelThresholds, type ModelChoice } from './modelThresholds.ts';
import {
  BASELINE,
  poolResults,
  runServingCase,
  sweepSlowLane,
  thresholdCandidates,
  type ServingCase,
  type ServingMode,
  type ServingResult,
  type SweepPoint,
} from './servingCase.ts';

/** How "optimised thresholds" are found: the throughput model (default) or a measured sweep of the slowest lane. */
export type ThresholdMethod = 'model' | 'sweep';

export function thresholdMethod(flag: string | undefined): ThresholdMethod {
  const m = flag ?? 'model';
  if (m !== 'model' && m !== 'sweep') throw new Error(`--thresholds must be model or sweep, got "${m}"`);
  return m;
}

/** Progress steps choosing the thresholds takes. */
export function choiceSteps(method: ThresholdMethod, concurrency: number): number {
  return method === 'model' ? 1 : thresholdCandidates(concurrency).length;
}

export interface TokenRouterChoice {
  mode: ServingMode;
  method: ThresholdMethod;
  sweep?: SweepPoint[];
  model?: ModelChoice;
}

export async function chooseTokenRouterMode(
  set: RunnerSet,
  c: Omit<ServingCase, 'mode'>,
  opts: { method: ThresholdMethod; slowLane: string; calibrationRequests: number; onStep?: (what: string) => void },
): Promise<TokenRouterChoice> {
  const cc = { ...c, requests: opts.calibrationRequests };
  if (opts.method === 'sweep') {
    const s = await sweepSlowLane(set, cc, opts.slowLane, () => opts.onStep?.('sweep'));
    return { mode: s.best, method: 'sweep', sweep: s.sweep };
  }
  const model = await modelThresholds(set, cc);
  opts.onStep?.('calibration');
  return { mode: model.mode, method: 'model', model };
}

/** A choice as JSON for results: thresholds, and the sweep or the model's inputs and prediction. */
export function choiceJson(ch: TokenRouterChoice): Record<string, unknown> {
  return {
    method: ch.method === 'model' ? 'throughput model (calibrated P, C, L_i(b); optimiseThresholds)' : 'sweep of the slowest lane',
    thresholds: ch.mode.thresholds,
    ...(ch.sweep ? { sweep: ch.sweep } : {}),
    ...(ch.model
      ? {
          predicted_tok_s: ch.model.predicted,
          best_predicted: ch.model.best_predicted,
          calibration_tok_s: ch.model.calibration_tok_s,
          P: ch.model.P,
          C: ch.model.C,
          latency_ms: ch.model.latency_ms,
          contended_latency_ms: ch.model.contended_latency_ms,
          candidates: ch.model.table,
        }
      : {}),
  };
}

export interface Comparison {
  tokenrouter: ServingResult;
  baseline: ServingResult;
  choice: TokenRouterChoice;
}

/**
 * TokenRouter mode (async-delayed, state retained, optimised thresholds) against the
 * standard-serving baseline, on the same runners in the same process. Repeats alternate the two
 * modes, so drifting background load hits both alike; each side's figures pool its repeats.
 */
export async function tokenRouterVsBaseline(
  set: RunnerSet,
  c: Omit<ServingCase, 'mode'>,
  opts: { method: ThresholdMethod; slowLane: string; calibrationRequests: number; repeats?: number; onStep?: (what: string) => void },
): Promise<Comparison> {
  const choice = await chooseTokenRouterMode(set, c, opts);
  const base: ServingResult[] = [];
  const tr: ServingResult[] = [];
  for (let k = 0; k < (opts.repeats ?? 1); k++) {
    base.push(await runServingCase(set, { ...c, mode: BASELINE }));
    opts.onStep?.('baseline');
    tr.push(await runServingCase(set, { ...c, mode: choice.mode }));
    opts.onStep?.('tokenrouter');
  }
  return { tokenrouter: poolResults(tr), baseline: poolResults(base), choice };
}
