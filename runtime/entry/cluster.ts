// A cluster: the entry over engines built from its options, with what operators and tests drive (thresholds, engines down or replaced) and failover.
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Engine } from '../core/engine.ts';
import { Cascade } from '../core/engineLoop.ts';
import { checkInvariants } from '../core/invariants.ts';
import type { Arrival, EngineEntry, EngineSettings, LaneStats, WireArrival } from '../../shared/protocol/engineProtocol.ts';
import { entryRounds, validateThresholds, type Rounds, type SchedulingMode } from '../core/servingPolicy.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import { beginEngines } from '../transport/threadEngine.ts';
import { buildEngines, modelLimits, SCHEDULING, sharedSettings } from './clusterOptions.ts';
import type { ClusterModel, ClusterOptions, EngineLimits, SharedSettings } from './clusterOptions.ts';
import { EngineFailover } from './engineFailover.ts';
import { Entry } from './entry.ts';
import type { RequestState } from './requestState.ts';

export type { ClusterModel, ClusterOptions };
export type { RequestHandle } from './entry.ts';

export class Cluster extends Entry implements EngineEntry {
  maxWaitMs: number;
  /** What every engine begins with, beside its own index and limits and the max-wait deadline of the moment. */
  private readonly shared: SharedSettings;
  private readonly failover: EngineFailover;
  /** The sync modes' rounds across every engine (none in the async modes). */
  private readonly rounds: Rounds;

  constructor(opts: ClusterOptions) {
    const cascades = new Cascade();
    super(opts.clock, buildEngines(opts, cascades), cascades, opts.maxConcurrency ?? Infinity, opts.maxQueue ?? Infinity, opts.trace);
    this.shared = sharedSettings(opts);
    this.rounds = entryRounds(this.shared.mode);
    this.maxWaitMs = opts.maxWaitMs ?? SCHEDULING.maxWaitMs;
    const host = {
      engines: this.engines,
      active: this.active,
      fail: (req: RequestState, error: Error) => this.end(req, { status: 'failed', reason: 'error', error }),
      flush: () => this.flush(),
      settingsFor: (i: number, old: EngineLimits) => this.settingsFor(i, old),
    };
    this.failover = new EngineFailover(host, this);
    beginEngines(
      this.engines.map((e, i) => ({ engine: e, settings: this.settingsFor(i, modelLimits(opts.models[i])) })),
      this,
    );
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
  get lanes(): Engine[] {
    return this.engines.flatMap((e) => (e.core ? [e.core] : []));
  }

  /** The engine of a model, itself, when it runs in this process. */
  lane(name: string): Engine | undefined {
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
    return this.failover.failLane(this.named(name), error);
  }

  /** Puts a restarted runner in place and lets the lane take work again. */
  replaceRunner(name: string, runner: ModelRunner): void {
    this.named(name).replaceRunner(runner);
    this.flush();
  }

  /** Puts a restarted engine (thread) in place of one that died. */
  replaceThread(name: string, fresh: EngineHandle): void {
    this.failover.replaceThread(this.named(name), fresh);
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
    this.failover.hold(name, a);
    this.moved(a.spec.id, name, a.counters.handoffs);
  }

  /** A request the `moved` event places on an engine that died before its peer heard is lost with it. */
  override moved(requestId: string, to: string, hops: number): void {
    super.moved(requestId, to, hops);
    const req = this.active.get(requestId);
    const e = this.engine(to);
    if (e && req?.whereabouts.model === to && req.whereabouts.hops === hops) this.failover.lostOnTheWay(req, e);
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
    if (this.shared.checkInvariants) checkInvariants(this);
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
