// A cluster: the entry over engines built from its options, with what operators and tests drive (thresholds, engines down or replaced) and failover.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import type { Engine } from '../core/engine.ts';
import { Cascade } from '../core/engineLoop.ts';
import { checkInvariants } from '../core/invariants.ts';
import type { Arrival, EngineEntry, EngineSettings, LaneStats, WireArrival } from '../../shared/protocol/engineProtocol.ts';
import { entryRounds, validateThresholds, type Rounds, type SchedulingMode } from '../core/servingPolicy.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import { InprocEngine } from '../transport/inprocEngine.ts';
import { rejoinEngine } from '../transport/threadEngine.ts';
import { modelSchema, serverConfigSchema, type LimitsConfig, type ModelConfig, type SchedulingConfig } from '../config/serverConfig.ts';
import { Entry } from './entry.ts';
import type { RequestState } from './requestState.ts';

export type { RequestHandle } from './entry.ts';

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

export class Cluster extends Entry implements EngineEntry {
  maxWaitMs: number;
  /** What every engine begins with, beside its own index and limits and the max-wait deadline of the moment. */
  private readonly shared: SharedSettings;
  /** The sync modes' rounds across every engine (none in the async modes). */
  private readonly rounds: Rounds;
  /** Handoffs to an engine that died, until its replacement joins. */
  private readonly held = new Map<string, Arrival[]>();
  /** How many requests each death failed: the engine's own watch and the restarter both hear one death. */
  private readonly failedBy = new WeakMap<Error, number>();

  constructor(opts: ClusterOptions) {
    const cascades = new Cascade();
    super(opts.clock, buildEngines(opts, cascades), cascades, opts.maxConcurrency ?? Infinity, opts.maxQueue ?? Infinity, opts.trace);
    this.shared = {
      models: opts.models.map((m) => m.name),
      mode: opts.mode ?? SCHEDULING.mode,
      retainState: opts.retainState ?? SCHEDULING.retainState,
      prefixCache: opts.prefixCache ?? false,
      trace: opts.trace !== undefined,
      checkInvariants: opts.checkInvariants ?? false,
      // an engine in this process reads the entry's clock itself (a virtual one has no origin)
      origin: opts.clock.origin ?? 0,
    };
    this.rounds = entryRounds(this.shared.mode);
    this.maxWaitMs = opts.maxWaitMs ?? SCHEDULING.maxWaitMs;
    for (const e of this.engines) this.watch(e);
    // engine by engine, each joining those begun before it
    this.engines.forEach((e, i) => rejoinEngine(e, this.settingsFor(i, modelLimits(opts.models[i])), this.engines.slice(0, i), this));
    const thresholds = this.engines.map((e) => e.threshold);
    validateThresholds(this.mode, this.engines, thresholds, this.maxConcurrency, this.maxWaitMs);
    this.emitConfig();
  }

  get mode(): SchedulingMode {
    return this.shared.mode;
  }

  /** Requests keep their state on the engines they leave (false: standard serving). */
  get retainState(): boolean {
    return this.shared.retainState;
  }

  /** The engines that run in this process, themselves (benches and tests read their figures). */
  get inProcessEngines(): Engine[] {
    return this.engines.flatMap((e) => (e.core ? [e.core] : []));
  }

  /** The engine of a model, itself, when it runs in this process. */
  inProcessEngine(name: string): Engine | undefined {
    return this.engine(name)?.core;
  }

  get activeCount(): number {
    return this.active.size;
  }

  get queuedCount(): number {
    return this.entryQueue.length;
  }

  /** Requests ended over the cluster's life. */
  get completed(): number {
    return this.serials - this.active.size - this.entryQueue.length;
  }

  get idle(): boolean {
    return this.active.size === 0 && this.entryQueue.length === 0;
  }

  laneStats(): LaneStats[] {
    return this.engines.map((e) => e.laneStats());
  }

  activeRequests(): IterableIterator<RequestState> {
    return this.active.values();
  }

  /** New thresholds (missing models keep theirs) and, optionally, a new max-wait deadline, for every engine wherever it runs. */
  setThresholds(thresholds: Readonly<Record<string, number>>, maxWaitMs = this.maxWaitMs): void {
    const next = this.engines.map((e) => thresholds[e.name] ?? e.threshold);
    validateThresholds(this.mode, this.engines, next, this.maxConcurrency, maxWaitMs);
    this.maxWaitMs = maxWaitMs;
    this.engines.forEach((e, i) => e.setSchedule(next[i], maxWaitMs));
    this.emitConfig();
    this.flush();
  }

  /** Takes a model's engine down (its batches fail) or brings it back. */
  setDown(name: string, down: boolean): void {
    this.named(name).setDown(down);
  }

  /** A model's runner (or engine thread) died: the requests it held fail, the rest keep going; the lane refuses work until replaced. */
  failLane(name: string, error: Error): number {
    return this.engineFailed(this.named(name), error);
  }

  /** Puts a restarted runner in place and lets the lane take work again. */
  replaceRunner(name: string, runner: ModelRunner): void {
    this.named(name).replaceRunner(runner);
    this.flush();
  }

  /** Puts a restarted engine (thread) in place of one that died: it builds the algorithms of the requests still going, then takes the handoffs held for it. */
  replaceThread(name: string, fresh: EngineHandle): void {
    const old = this.named(name);
    const i = this.engines.indexOf(old);
    this.engines[i] = fresh;
    this.watch(fresh);
    rejoinEngine(fresh, this.settingsFor(i, old), this.engines, this);
    for (const req of this.active.values()) if (req.spec.ref && req.spec.models.includes(name)) fresh.deploy(req.spec.ref);
    for (const a of this.held.get(name) ?? []) if (this.active.get(a.spec.id)?.spec === a.spec) fresh.arrive(a);
    this.held.delete(name);
    this.flush();
  }

  // --- failover: an engine that dies fails the requests decoding there, whoever restarts it ---

  private watch(e: EngineHandle): void {
    e.onFailure((error) => {
      if (this.engines.includes(e)) this.engineFailed(e, error);
    });
  }

  /**
   * The runner died and took every cache with it: the requests decoding there fail (the others lost a cache there at
   * most, and re-send their whole sequence when they next go there), and the engine refuses work until it is replaced.
   */
  private engineFailed(e: EngineHandle, error: Error): number {
    const seen = this.failedBy.get(error);
    if (seen !== undefined) return seen;
    let failed = e.runnerLost(error);
    if (failed === null) {
      failed = 0;
      for (const req of [...this.active.values()]) {
        if (req.whereabouts.model !== e.name) continue;
        this.fail(req, new TokenRouterError('unavailable', `model ${e.name} failed: ${error.message}`, 'model'));
        failed++;
      }
      for (const other of this.engines) if (other !== e) other.peerLost(e.name);
    }
    this.flush();
    this.failedBy.set(error, failed);
    return failed;
  }

  private fail(req: RequestState, error: Error): void {
    this.end(req, { status: 'failed', reason: 'error', error });
  }

  // --- the sync modes' rounds (step-sync, model-sync): a round may open whenever work may have come ---

  /** A report was applied: a sync round reads every engine's lane, and the steps it let launch may be back. */
  reported(returned: number): void {
    this.rounds.finished(returned);
    this.flush();
  }

  /** Lets a sync mode open its next round (engines wake themselves for their own work). */
  protected override flush(): void {
    this.rounds.open(this.engines);
  }

  // --- EngineEntry beyond a request's plain path: engines that died, handoffs with no link, a remote model's recompute ---

  /** An engine that died takes nothing: a live request's handoff waits for the fresh one. */
  override deliver(name: string, a: Arrival): void {
    if (!this.engine(name)!.failure) return super.deliver(name, a);
    if (this.active.get(a.spec.id)?.spec !== a.spec) return;
    this.held.set(name, [...(this.held.get(name) ?? []), a]);
    this.moved(a.spec.id, name, a.counters.handoffs);
  }

  /** A request the `moved` event places on an engine that died before its peer heard is lost with it. */
  override moved(requestId: string, to: string, hops: number): void {
    super.moved(requestId, to, hops);
    const req = this.active.get(requestId);
    const failure = this.engine(to)?.failure;
    if (!failure || req?.whereabouts.model !== to || req.whereabouts.hops !== hops || this.held.get(to)?.some((a) => a.spec.id === requestId)) return;
    this.fail(req, new TokenRouterError('unavailable', `model ${to} failed: ${failure.message} (before this request reached it)`, 'model'));
  }

  deliverWire(to: string, arrivals: readonly WireArrival[]): void {
    for (const w of arrivals) {
      const req = this.active.get(w.spec.id);
      // the request's own spec: the algorithm the entry built for it
      if (req?.spec.serial === w.spec.serial) this.deliver(to, { ...w, spec: req.spec });
    }
    this.flush();
  }

  whereabouts(requestId: string): RequestState['whereabouts'] | undefined {
    return this.active.get(requestId)?.whereabouts;
  }

  sequence(requestId: string): readonly number[] | undefined {
    const req = this.active.get(requestId);
    return req && [...req.opts.prompt, ...req.output];
  }

  settled(): void {
    if (this.shared.checkInvariants) checkInvariants(this.inProcessEngines, this.engines.length, this.active.values());
  }

  /** `limits` may be an engine: only its limits are taken. */
  private settingsFor(index: number, { maxBatch, maxStepTokens, threshold, kvCapacityTokens }: EngineLimits): EngineSettings {
    return { ...this.shared, index, maxBatch, maxStepTokens, threshold, kvCapacityTokens, maxWaitMs: this.maxWaitMs };
  }

  private named(name: string): EngineHandle {
    const e = this.engine(name);
    if (!e) throw new TokenRouterError('not_found', `no model "${name}"`, 'model');
    return e;
  }

  private emitConfig(): void {
    this.trace?.emit({
      type: 'config',
      t: this.clock.now(),
      mode: this.mode,
      retainState: this.retainState,
      // every engine in the config's model order: the timeline lays its lanes out (and colours them) by it
      thresholds: Object.fromEntries(this.engines.map((e) => [e.name, e.threshold])),
      maxWaitMs: Number.isFinite(this.maxWaitMs) ? this.maxWaitMs : -1,
    });
  }
}
