// What a Cluster is built from, and the defaults it fills in: the config schema's own, so a cluster built without a config runs as a server would.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { serverConfigSchema, type LimitsConfig, type SchedulingConfig } from '../config/serverConfig.ts';
import type { ClusterModel } from './buildEngines.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';

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
    /** false: nothing is traced until `setTracing(true)` (a server traces only while something reads it); default true when `trace` is given. */
    tracing?: boolean;
    /** Debug mode: check every invariant after every batch (tests and the stress suite). */
    checkInvariants?: boolean;
    /** The models' tokenizer, for engines built here (engines elsewhere load theirs beside their model): requests that ask for text are detokenised by the engine. */
    tokenizer?: Decoder;
  };

/** The schema's scheduling block as an empty one parses: one source for every default. */
const SCHEDULING = serverConfigSchema.shape.scheduling.parse(undefined);

/** The scheduling and limits a cluster runs with: what was given, else the config schema's defaults. */
export function clusterSettings(opts: ClusterOptions) {
  return {
    mode: opts.mode ?? SCHEDULING.mode,
    retainState: opts.retainState ?? SCHEDULING.retainState,
    maxWaitMs: opts.maxWaitMs ?? SCHEDULING.maxWaitMs,
    prefixCache: opts.prefixCache ?? false,
    maxConcurrency: opts.maxConcurrency ?? Infinity,
    maxQueue: opts.maxQueue ?? Infinity,
  };
}
