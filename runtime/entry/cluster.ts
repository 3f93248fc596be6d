// The entry: admits requests (refusing, by parameter, what its engines cannot serve), streams what the engines commit in output order, ends requests everywhere.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Engine } from '../core/engine.ts';
import { Cascade } from '../core/engineLoop.ts';
import { checkInvariants } from '../core/invariants.ts';
import type { Arrival, Commit, EngineEntry, EngineSettings, Finish, LaneStats, WireArrival } from '../core/messages.ts';
import { servingPolicy, validateThresholds, type SchedulingMode, type ServingPolicy } from '../core/servingPolicy.ts';
import { beginEngines, type EngineHandle } from '../transport/engineHandle.ts';
import { buildEngines, modelLimits, SCHEDULING, sharedSettings } from './clusterOptions.ts';
import type { ClusterModel, ClusterOptions, EngineLimits, SharedSettings } from './clusterOptions.ts';
import { EngineFailover } from './engineFailover.ts';
import { RequestState, requestEndEvent, requestSpec, type RequestResult, type SubmitOptions } from './requestState.ts';

export type { ClusterModel, ClusterOptions };

export interface RequestHandle {
  readonly id: string;
  readonly done: Promise<RequestResult>;
  cancel(): void;
}

export class Cluster implements EngineEntry {
  readonly clock: Clock;
  /** Every model's engine as the entry drives it, in model order. */
  readonly engines: EngineHandle[];
  maxWaitMs: number;
  readonly maxConcurrency: number;
  readonly maxQueue: number;
  /** Committed output tokens and ended requests over the cluster's life. */
  committed = 0;
  completed = 0;
  /** The serving policy's entry side: the rounds of the sync modes, across every engine. */
  private readonly policy: ServingPolicy;
  private readonly trace: TraceSink | undefined;
  /** What every engine begins with, beside its own index and limits and the max-wait deadline of the moment. */
  private readonly shared: SharedSettings;
  private readonly active = new Map<string, RequestState>();
  private readonly entryQueue: RequestState[] = [];
  /** Shared with the engines in this thread: none launches before a cascade the entry runs is over. */
  private readonly cascades = new Cascade();
  private readonly failover: EngineFailover;
  private requestSeq = 0;
  private serialSeq = 0;

  constructor(opts: ClusterOptions) {
    this.clock = opts.clock;
    this.shared = sharedSettings(opts);
    this.policy = servingPolicy(this.shared.mode, this.shared.retainState);
    this.maxWaitMs = opts.maxWaitMs ?? SCHEDULING.maxWaitMs;
    this.maxConcurrency = opts.maxConcurrency ?? Infinity;
    this.maxQueue = opts.maxQueue ?? Infinity;
    this.trace = opts.trace;
    this.engines = buildEngines(opts, this.cascades);
    const host = {
      engines: this.engines,
      active: this.active,
      fail: (req: RequestState, error: Error) => this.end(req, 'failed', 'error', error),
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
    return this.policy.mode;
  }

  /** Requests keep their state on the engines they leave (false: standard serving). */
  get retainState(): boolean {
    return this.policy.retain;
  }

  /** The engine of a model, wherever it runs. */
  engine(name: string): EngineHandle | undefined {
    return this.engines.find((e) => e.name === name);
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

  /** No request in flight or waiting. */
  get idle(): boolean {
    return this.active.size === 0 && this.entryQueue.length === 0;
  }

  submit<M>(options: SubmitOptions<M>): RequestHandle {
    const opts = options as SubmitOptions;
    const maxContext = checkSubmission(opts, this.engines);
    if (this.active.size >= this.maxConcurrency && this.entryQueue.length >= this.maxQueue) {
      throw new TokenRouterError('overloaded', `admission queue is full (${this.maxQueue} waiting)`, null);
    }
    const id = opts.id ?? `req-${++this.requestSeq}`;
    if (this.active.has(id)) throw new TokenRouterError('invalid_request', `request id ${id} is already in flight`, 'id');
    const req = new RequestState(requestSpec(id, ++this.serialSeq, opts, maxContext), opts, this.clock.now());
    if (this.active.size < this.maxConcurrency) this.start(req);
    else this.entryQueue.push(req);
    this.flush();
    return { id, done: req.done, cancel: () => this.cancel(id) };
  }

  /** Cancels a request wherever it is: queued, running, in a batch, or pending-return at a peer. */
  cancel(id: string): boolean {
    const qi = this.entryQueue.findIndex((r) => r.id === id);
    const req = qi >= 0 ? this.entryQueue.splice(qi, 1)[0] : this.active.get(id);
    if (!req) return false;
    this.end(req, 'cancelled', 'cancelled');
    this.flush();
    return true;
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

  laneStats(): LaneStats[] {
    return this.engines.map((e) => e.laneStats());
  }

  /** Requests in flight at the entry. */
  activeRequests(): IterableIterator<RequestState> {
    return this.active.values();
  }

  // --- EngineEntry: what engines tell the entry, and handoffs between engines with no link of their own ---

  commit(c: Commit): void {
    const req = this.active.get(c.requestId);
    if (!req) return;
    if (c.index !== req.output.length) {
      // engines in other threads report on their own ports: a commit that overtook earlier ones waits for them
      if (c.index > req.output.length) req.early.set(c.index, c);
      return;
    }
    for (let next: Commit | undefined = c; next && !req.finished; next = req.early.get(req.output.length)) {
      req.early.delete(next.index);
      this.apply(req, next);
    }
    if (req.lateFinish) this.finish(req.lateFinish);
  }

  private apply(req: RequestState, c: Commit): void {
    req.append(c);
    this.committed++;
    if (req.firstTokenAt === null) {
      req.firstTokenAt = this.clock.now();
      req.actor.send({ type: 'FIRST_TOKEN' });
      this.emitState(req.id, 'streaming');
    }
    try {
      req.opts.onToken?.(c.token, req.spec.models[c.model - 1], req.output.length - 1, c.signals, c.atHandoff, c.text);
    } catch (e) {
      this.end(req, 'failed', 'error', e as Error);
    }
  }

  finish(f: Finish): void {
    const req = this.active.get(f.requestId);
    if (!req) return;
    // a finish that overtook commits before it waits for them
    if (f.committed !== undefined && req.output.length < f.committed) {
      req.lateFinish = f;
      return;
    }
    if (f.counters) req.counters = f.counters;
    this.end(req, f.status, f.reason, f.error, f.text);
  }

  deliver(name: string, a: Arrival): void {
    const e = this.engine(name)!;
    const live = this.active.get(a.spec.id)?.spec === a.spec;
    // an engine that died takes nothing: a live request's handoff waits for the fresh one
    if (e.failed && live) this.failover.hold(name, a);
    if (live) this.moved(a.spec.id, name, a.counters.handoffs);
    if (!e.failed) e.arrive(a);
  }

  /** Where a request decodes now: its handoffs are counted, so a report that comes late changes nothing. */
  moved(requestId: string, to: string, hops: number): void {
    const req = this.active.get(requestId);
    if (!req || hops <= req.whereabouts.hops) return;
    req.whereabouts = { model: to, hops };
    const e = this.engine(to);
    if (e) this.failover.lostOnTheWay(req, e);
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

  traced(events: readonly TraceEvent[]): void {
    if (this.trace) for (const e of events) this.trace.emit(e);
  }

  reported(returned: number): void {
    this.policy.rounds.finished(returned);
    // a sync round reads every engine's lane: one that reported may open the next round
    this.flush();
  }

  settled(): void {
    if (this.shared.checkInvariants) checkInvariants(this);
  }

  cascade<T>(fn: () => T): T {
    return this.cascades.run(fn);
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

  // --- request lifecycle ---

  private start(req: RequestState): void {
    this.active.set(req.id, req);
    this.emitState(req.id, 'admitted');
    const { spec } = req;
    // every engine the request may visit can build its algorithm before a handoff reaches it
    if (spec.ref) for (const name of spec.models) this.engine(name)!.deploy(spec.ref);
    this.deliver(spec.models[spec.algorithm.entry - 1], req.firstArrival());
  }

  /** `tail`: text the engine held back until the end. */
  private end(req: RequestState, status: RequestResult['status'], reason: RequestResult['finishReason'], error?: Error, tail = ''): void {
    if (req.finished) return;
    req.end(status);
    const wasActive = this.active.delete(req.id);
    // every engine the request may hold state on lets it go; the one that owned it has its tallies
    for (const name of new Set(req.spec.models)) {
      const counters = this.engine(name)!.release(req.spec, status);
      if (counters) req.counters = counters;
    }
    this.emitState(req.id, status);
    this.completed++;
    const result = req.result(reason, this.clock.now(), error, tail);
    this.trace?.emit(requestEndEvent(result));
    if (wasActive) this.startWaiting();
    req.answer(result);
  }

  private startWaiting(): void {
    while (this.active.size < this.maxConcurrency && this.entryQueue.length > 0) this.start(this.entryQueue.shift()!);
  }

  /** Lets a sync mode open its next round (engines wake themselves for their own work). */
  private flush(): void {
    this.policy.rounds.open(this.engines);
  }

  private emitState(requestId: string, state: string): void {
    this.trace?.emit({ type: 'request-state', t: this.clock.now(), requestId, model: null, state });
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

/** The context every engine the algorithm runs on fits; throws the client's error otherwise. */
export function checkSubmission(opts: SubmitOptions, engines: readonly EngineHandle[]): number {
  const alg = opts.algorithm;
  const lanes = alg.models.map((name) => {
    const lane = engines.find((e) => e.name === name);
    if (!lane) throw new TokenRouterError('not_found', `algorithm ${alg.name} needs model "${name}", which this server does not run`, 'model');
    return lane;
  });
  // a model that can only make a request wait (a remote one cut off from NATS) refuses it rather than let it hold a slot
  for (const l of lanes) {
    const refusal = l.admissionError?.();
    if (refusal) throw refusal;
  }
  const down = lanes.find((l) => l.down);
  if (down) throw new TokenRouterError('model_unavailable', `model ${down.name} is down; retry shortly`, 'model', { retry_after_s: 1 });
  if (!(alg.entry >= 1 && alg.entry <= lanes.length)) {
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name}: entry model ${alg.entry} is not in 1..${lanes.length}`, 'model');
  }
  if (opts.prompt.length === 0) throw new TokenRouterError('invalid_request', 'the prompt is empty', 'prompt');
  if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 1) {
    throw new TokenRouterError('invalid_request', `max_tokens must be an integer ≥ 1, got ${opts.maxTokens}`, 'max_tokens');
  }
  const maxContext = Math.min(...lanes.map((l) => l.info.maxContext));
  if (!opts.algorithmRef && lanes.some((l) => !l.core))
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name} runs on an engine thread, so it needs an algorithmRef`, 'algorithm');
  if (opts.prompt.length >= maxContext) {
    throw new TokenRouterError('invalid_request', `the prompt has ${opts.prompt.length} tokens; the context window is ${maxContext}`, 'prompt');
  }
  // a request whose KV could never be placed, even in an empty pool, is refused now rather than wait forever
  const need = Math.min(opts.prompt.length + opts.maxTokens, maxContext);
  const tight = lanes.reduce((a, l) => (l.kvCapacityTokens < a.kvCapacityTokens ? l : a));
  if (need > tight.kvCapacityTokens) {
    throw new TokenRouterError(
      'too_large',
      `the request needs ${need} KV tokens (prompt ${opts.prompt.length} + max_tokens ${opts.maxTokens}), more than model ${tight.name}'s whole KV pool holds (${tight.kvCapacityTokens} tokens within memory.budgetMiB); lower max_tokens or raise the budget`,
      'max_tokens',
    );
  }
  return maxContext;
}
