// What a Cluster is built from, with the config schema's defaults (a cluster built without a config runs as a server would), and its engines.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import type { Cascade } from '../core/engineLoop.ts';
import type { EngineSettings } from '../../shared/protocol/engineProtocol.ts';
import { InprocEngine } from '../transport/inprocEngine.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import { modelSchema, serverConfigSchema, type LimitsConfig, type ModelConfig, type SchedulingConfig } from '../config/serverConfig.ts';

/**
 * The config's scheduling and limits fields under their config names (runtime/config/serverConfig.ts
 * documents them), each optional here: a library user (bench, simulation, test) leaves out what the
 * service always passes. Unset: the schema's defaults, except prefix caching (off: a cluster's
 * caller reads an empty pool when it is idle, which cached prefixes would fill) and concurrency and
 * queue (unbounded).
 */
export type ClusterOptions = Partial<Pick<SchedulingConfig, 'mode' | 'retainState' | 'maxWaitMs' | 'prefixCache'>> &
  Partial<Pick<LimitsConfig, 'maxConcurrency' | 'maxQueue'>> & {
    clock: Clock;
    models: readonly ClusterModel[];
    trace?: TraceSink;
    /** Debug mode: check every invariant after every batch (tests and the stress suite). */
    checkInvariants?: boolean;
    /** The models' tokenizer, for engines built here (engines elsewhere load theirs beside their model): requests that ask for text are detokenised by the engine. */
    tokenizer?: Decoder;
  };

/** The schema's scheduling block as an empty one parses: one source for every default. */
export const SCHEDULING = serverConfigSchema.shape.scheduling.parse(undefined);

/** What bounds one engine's batches and pool: its fields of the settings it begins with. */
export type EngineLimits = Pick<EngineSettings, 'maxBatch' | 'maxStepTokens' | 'threshold' | 'kvCapacityTokens'>;

/** What every engine of a cluster begins with, beside its own index and limits and the max-wait deadline of the moment. */
export type SharedSettings = Omit<EngineSettings, 'index' | 'maxWaitMs' | keyof EngineLimits>;

/** The settings every engine shares, from the options (unset: the schema's defaults, prefix caching off). */
export function sharedSettings(opts: ClusterOptions): SharedSettings {
  return {
    models: opts.models.map((m) => m.name),
    mode: opts.mode ?? SCHEDULING.mode,
    retainState: opts.retainState ?? SCHEDULING.retainState,
    prefixCache: opts.prefixCache ?? false,
    trace: opts.trace !== undefined,
    checkInvariants: opts.checkInvariants ?? false,
    // an engine in this process reads the entry's clock itself (a virtual one has no origin)
    origin: opts.clock.origin ?? 0,
  };
}

/** A model's engine: built here around `runner`, or already running in its own thread (`thread`). */
export type ClusterModel = Pick<ModelConfig, 'name'> &
  Partial<EngineLimits> &
  ({ runner: ModelRunner; thread?: never } | { thread: EngineHandle; runner?: never });

/** A model's limits, the config schema's where none is given. */
export function modelLimits(m: ClusterModel): EngineLimits {
  return {
    maxBatch: m.maxBatch ?? modelSchema.shape.maxBatch.parse(undefined),
    maxStepTokens: m.maxStepTokens ?? modelSchema.shape.maxStepTokens.parse(undefined),
    threshold: m.threshold ?? 1,
    kvCapacityTokens: m.kvCapacityTokens ?? Infinity,
  };
}

/** Every model's engine, in model order; refuses an empty list, a name given twice, a batch below 1 and threads on a clock they cannot share. */
export function buildEngines(opts: ClusterOptions, cascade: Cascade): EngineHandle[] {
  const { models, clock } = opts;
  if (models.length === 0) throw new TokenRouterError('invalid_request', 'a cluster needs at least one model', 'models');
  if (models.some((m) => m.thread) && clock.origin === undefined)
    throw new TokenRouterError('invalid_request', 'engine threads need a real clock (one with an origin)', 'clock');
  const names = new Set<string>();
  for (const m of models) {
    const { maxBatch, maxStepTokens } = modelLimits(m);
    if (names.has(m.name)) throw new TokenRouterError('invalid_request', `model "${m.name}" is listed twice`, 'models');
    if (!(maxBatch >= 1)) throw new TokenRouterError('invalid_request', `maxBatch of ${m.name} must be ≥ 1`, 'maxBatch');
    if (!(maxStepTokens >= 1)) throw new TokenRouterError('invalid_request', `maxStepTokens of ${m.name} must be ≥ 1`, 'maxStepTokens');
    names.add(m.name);
  }
  return models.map((m) => (m.runner ? new InprocEngine(m.name, m.runner, clock, opts.trace, cascade, opts.tokenizer) : m.thread));
}
