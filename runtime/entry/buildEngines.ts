// A cluster's engines from its model list: engines built here around their runners, engines already running elsewhere, and the settings each begins with.
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { TraceSink } from '../../shared/trace.ts';
import type { Cascade } from '../core/engineLoop.ts';
import { InprocEngine } from '../transport/inprocEngine.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import { modelSchema, type ModelConfig } from '../config/serverConfig.ts';
import type { EngineSettings } from '../core/messages.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';

/** What bounds one engine's batches and pool: its fields of the settings it begins with. */
export type EngineLimits = Pick<EngineSettings, 'maxBatch' | 'maxStepTokens' | 'threshold' | 'kvCapacityTokens'>;

/** A model's engine: built here around `runner`, or already running in its own thread (`thread`). */
export type ClusterModel = Pick<ModelConfig, 'name'> &
  Partial<EngineLimits> &
  ({ runner: ModelRunner; thread?: never } | { thread: EngineHandle; runner?: never });

/** A model's batch bound when none is given: the config schema's. */
const MAX_BATCH = modelSchema.shape.maxBatch.parse(undefined);
/** A model's step token budget when none is given: the config schema's. */
const MAX_STEP_TOKENS = modelSchema.shape.maxStepTokens.parse(undefined);

export function modelLimits(m: ClusterModel): EngineLimits {
  return {
    maxBatch: m.maxBatch ?? MAX_BATCH,
    maxStepTokens: m.maxStepTokens ?? MAX_STEP_TOKENS,
    threshold: m.threshold ?? 1,
    kvCapacityTokens: m.kvCapacityTokens ?? Infinity,
  };
}

/** Every model's engine, in model order; refuses an empty list, a name given twice, a batch below 1 and threads on a clock they cannot share. */
export function buildEngines(
  models: readonly ClusterModel[],
  clock: Clock,
  trace: TraceSink | undefined,
  cascade: Cascade,
  decoder: Decoder | undefined,
): EngineHandle[] {
  if (models.length === 0) throw new TokenRouterError('invalid_request', 'a cluster needs at least one model', 'models');
  if (models.some((m) => m.thread) && clock.origin === undefined)
    throw new TokenRouterError('invalid_request', 'engine threads need a real clock (one with an origin)', 'clock');
  const names = new Set<string>();
  for (const m of models) {
    if (names.has(m.name)) throw new TokenRouterError('invalid_request', `model "${m.name}" is listed twice`, 'models');
    if (!((m.maxBatch ?? MAX_BATCH) >= 1)) throw new TokenRouterError('invalid_request', `maxBatch of ${m.name} must be ≥ 1`, 'maxBatch');
    if (!((m.maxStepTokens ?? MAX_STEP_TOKENS) >= 1)) throw new TokenRouterError('invalid_request', `maxStepTokens of ${m.name} must be ≥ 1`, 'maxStepTokens');
    names.add(m.name);
  }
  return models.map((m) => (m.runner ? new InprocEngine(m.name, m.runner, clock, trace, cascade, decoder) : m.thread));
}

/** What the whole deployment shares, as every engine's settings carry it (the clock becomes its origin). */
export type DeploymentSettings = Pick<EngineSettings, 'mode' | 'retainState' | 'maxWaitMs' | 'prefixCache' | 'trace' | 'checkInvariants'> & { clock: Clock };

/** The settings engine `index` of `engines` begins with (again after a restart). */
export function engineSettings(
  index: number,
  engines: readonly EngineHandle[],
  limits: EngineLimits,
  { clock, ...shared }: DeploymentSettings,
): EngineSettings {
  const { maxBatch, maxStepTokens, threshold, kvCapacityTokens } = limits;
  // an engine in this process reads the entry's clock itself (a virtual one has no origin)
  return { index, models: engines.map((e) => e.name), maxBatch, maxStepTokens, threshold, kvCapacityTokens, ...shared, origin: clock.origin ?? 0 };
}
