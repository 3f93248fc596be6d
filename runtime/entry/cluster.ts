// The entry: admits requests, streams what the engines commit, ends requests everywhere; its engines run wherever they are placed.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import { GREEDY, type ModelRunner } from '../runner/modelRunner.ts';
import { validateThresholds, type SchedulingMode } from '../core/servingPolicy.ts';
import type { Engine } from '../core/engine.ts';
import type { LaneStats } from '../core/messages.ts';
import { checkInvariants } from '../core/invariants.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import type { Arrival, Commit, EngineEntry, EngineSettings, Finish, WireArrival } from '../core/messages.ts';
import { EngineFailover } from './engineFailover.ts';
import { beginEngines } from '../transport/engineHandle.ts';
import { Cascade } from '../core/engineLoop.ts';
import { servingPolicy, type ServingPolicy } from '../core/servingPolicy.ts';
import { buildEngines, engineSettings, modelLimits, type ClusterModel, type EngineLimits } from './buildEngines.ts';
import { checkSubmission } from './submission.ts';
import { clusterSettings, type ClusterOptions } from './clusterOptions.ts';
import { RequestState, requestEndEvent, requestSpec, type FinishReason, type RequestResult, type SubmitOptions, type Whereabouts } from './requestState.ts';

export type { ClusterModel };
export type { ClusterOptions };

export interface RequestHandle {
  readonly id: string;
  readonly done: Promise<RequestResult>;
  cancel(): void;
}

export class Cluster implements EngineEntry {
  readonly clock: Clock;
  /** The serving policy's entry side: the rounds of the sync modes, across every engine. */
  readonly policy: ServingPolicy;
  /** Every model's engine as the entry drives it, in model order. */
  readonly engines: EngineHandle[];
  maxWaitMs: number;
  readonly maxConcurrency: number;
  readonly maxQueue: number;
  /** The trace sink while tracing is on; undefined: no trace events are made. */
  trace: TraceSink | undefined;
  private readonly sink: TraceSink | undefined;
  private readonly byName = new Map<string, EngineHandle>();
  private readonly prefixCache: boolean;
  private readonly active = new Map<string, RequestState>();
  private readonly entryQueue: RequestState[] = [];
  /** Shared with the engines in this thread: none launches before a cascade the entry runs is over. */
  private readonly cascades = new Cascade();
  private requestSeq = 0;
  private serialSeq = 0;
  private readonly checked: boolean;
  private readonly failover: EngineFailover;
  /** Committed output tokens over the cluster's life. */
  committed = 0;
  completed = 0;

  constructor(opts: ClusterOptions) {
    this.clock = opts.clock;
    const settings = clusterSettings(opts);
    this.policy = servingPolicy(settings.mode, settings.retainState);
    ({ maxWaitMs: this.maxWaitMs, maxConcurrency: this.maxConcurrency, maxQueue: this.maxQueue, prefixCache: this.prefixCache } = settings);
    this.sink = opts.trace;
    this.trace = opts.tracing === false ? undefined : opts.trace;
    this.checked = opts.checkInvariants ?? false;
    this.engines = buildEngines(opts.models, this.clock, this.sink, this.cascades, opts.tokenizer);
    for (const e of this.engines) this.byName.set(e.name, e);
    this.failover = new EngineFailover({
      engines: this.engines,
      engine: (name) => this.byName.get(name),
      rename: (name, e) => this.byName.set(name, e),
      request: (id) => this.active.get(id),
      activeRequests: () => this.active.values(),
      end: (req, status, reason, error) => this.end(req, status, reason, error),
      flush: () => this.flush(),
      settingsFor: (i, t) => this.settingsFor(i, t),
    });
    for (const e of this.engines) this.failover.watch(e);
    beginEngines(
      this.engines.map((e, i) => ({ engine: e, settings: this.settingsFor(i, modelLimits(opts.models[i])) })),
      this,
    );
    this.validateThresholds(this.engines.map((l) => l.threshold));
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
    return this.byName.get(name);
  }

  /** The engines that run in this process, themselves (benches and tests read their figures). */
  get lanes(): Engine[] {
    return this.engines.flatMap((e) => (e.core ? [e.core] : []));
  }

  /** The engine of a model, itself, when it runs in this process. */
  lane(name: string): Engine | undefined {
    return this.byName.get(name)?.core;
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

  // --- public API ---

  submit<M>(opts: SubmitOptions<M>): RequestHandle {
    const alg = opts.algorithm;
    const { maxContext } = checkSubmission(opts as SubmitOptions<unknown>, this.byName);
    const ref = opts.algorithmRef;
    if (this.active.size >= this.maxConcurrency && this.entryQueue.length >= this.maxQueue) {
      throw new TokenRouterError('overloaded', `admission queue is full (${this.maxQueue} waiting)`, null);
    }
    const id = opts.id ?? `req-${++this.requestSeq}`;
    if (this.active.has(id)) throw new TokenRouterError('invalid_request', `request id ${id} is already in flight`, 'id');
    let resolve!: (r: RequestResult) => void;
    const done = new Promise<RequestResult>((r) => (resolve = r));
    const minTokens = Math.max(0, Math.min(opts.minTokens ?? 0, opts.maxTokens));
    const spec = requestSpec(
      id,
      ++this.serialSeq,
      alg as SubmitOptions['algorithm'],
      ref,
      opts.prompt,
      opts.maxTokens,
      minTokens,
      { ...GREEDY, ...opts.sampling },
      maxContext,
      opts,
    );
    const req = new RequestState(spec, opts.prompt, this.clock.now(), opts.onToken, opts.onEnd, resolve);
    if (this.active.size < this.maxConcurrency) this.start(req);
    else this.entryQueue.push(req);
    this.flush();
    return { id, done, cancel: () => this.cancel(id) };
  }

  /** Cancels a request wherever it is: queued, running, in a batch, or pending-return at a peer. */
  cancel(id: string): boolean {
    const qi = this.entryQueue.findIndex((r) => r.id === id);
    if (qi >= 0) {
      const [req] = this.entryQueue.splice(qi, 1);
      this.end(req, 'cancelled', 'cancelled');
      return true;
    }
    const req = this.active.get(id);
    if (!req) return false;
    this.end(req, 'cancelled', 'cancelled');
    this.flush();
    return true;
  }

  /** Ends a request as done (e.g. a stop string matched in its text). */
  stop(id: string): boolean {
    const req = this.active.get(id);
    if (!req) return false;
    this.end(req, 'done', 'stop');
    this.flush();
    return true;
  }

  /** New thresholds (missing models keep theirs) and, optionally, a new max-wait deadline, for every engine wherever it runs. */
  setThresholds(thresholds: Readonly<Record<string, number>>, maxWaitMs = this.maxWaitMs): void {
    const next = this.engines.map((l) => thresholds[l.name] ?? l.threshold);
    this.validateThresholds(next, maxWaitMs);
    this.maxWaitMs = maxWaitMs;
    this.engines.forEach((l, i) => l.setSchedule(next[i], maxWaitMs));
    this.emitConfig();
    this.flush();
  }

  /**
   * Tracing on for the entry and every engine, wherever it runs (the config in force is the first
   * event a new reader sees), or off: then neither the entry nor any engine builds a trace event.
   */
  setTracing(on: boolean): void {
    if (!this.sink || on === (this.trace !== undefined)) return;
    this.trace = on ? this.sink : undefined;
    if (on) this.emitConfig();
    for (const e of this.engines) e.setTracing(on);
  }

  /** Takes a sub-server down (its batches fail) or brings it back. */
  setDown(name: string, down: boolean): void {
    this.failover.setDown(name, down);
  }

  /** A model's runner (or engine thread) died: the requests it held fail, the rest keep going; the lane refuses work until replaced. */
  failLane(name: string, error: Error): number {
    return this.failover.failLane(name, error);
  }

  /** Puts a restarted runner in place and lets the lane take work again. */
  replaceRunner(name: string, runner: ModelRunner): void {
    this.failover.replaceRunner(name, runner);
  }

  /** Puts a restarted engine (thread) in place of one that died. */
  replaceThread(name: string, fresh: EngineHandle): void {
    this.failover.replaceThread(name, fresh, this);
  }

  laneStats(): LaneStats[] {
    return this.engines.map((e) => e.laneStats());
  }

  /** Requests in flight at the entry. */
  *activeRequests(): IterableIterator<RequestState> {
    yield* this.active.values();
  }

  // --- EngineEntry: what engines tell the entry, and handoffs between engines with no link of their own ---

  commit(c: Commit): void {
    const req = this.active.get(c.requestId);
    if (!req || req.finished) return;
    if (c.index === req.output.length && req.early.size === 0) {
      // in order, nothing waiting: the common case needs no generator
      this.apply(req, c);
      if (req.finished) return;
    } else {
      for (const next of req.inOrder(c)) {
        this.apply(req, next);
        if (req.finished) return;
      }
    }
    const f = req.dueFinish();
    if (f) this.finish(f);
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
      req.onToken?.(c.token, req.spec.models[c.model - 1], req.producedBy.length - 1, c.signals, c.atHandoff, c.text);
    } catch (e) {
      this.end(req, 'failed', 'error', e as Error);
    }
  }

  finish(f: Finish): void {
    const req = this.active.get(f.requestId);
    if (!req || req.finished) return;
    if (req.waitsFor(f)) return;
    if (f.counters) req.counters = f.counters;
    if (f.text) req.text += f.text;
    this.end(req, f.status, f.reason, f.error);
  }

  deliver(name: string, a: Arrival): void {
    const e = this.byName.get(name)!;
    const live = this.active.get(a.spec.id)?.spec === a.spec;
    // its engine died: the handoff waits for the fresh one
    const dead = this.failover.hold(e, a, live);
    if (live) this.moved(a.spec.id, name, a.counters.handoffs);
    if (!dead) e.arrive(a);
  }

  /** Where a request decodes now: its handoffs are counted, so a report that comes late changes nothing. */
  moved(requestId: string, to: string, hops: number): void {
    const req = this.active.get(requestId);
    if (!req?.moveTo(to, hops)) return;
    const e = this.byName.get(to);
    if (e) this.failover.lostOnTheWay(req, e);
  }

  deliverWire(to: string, arrivals: readonly WireArrival[]): void {
    for (const w of arrivals) {
      const req = this.active.get(w.spec.id);
      if (!req || req.spec.serial !== w.spec.serial) continue;
      // the request's own spec: the algorithm the entry built for it
      this.deliver(to, { ...w, spec: req.spec });
    }
    this.flush();
  }

  whereabouts(requestId: string): Whereabouts | undefined {
    return this.active.get(requestId)?.whereabouts;
  }

  sequence(requestId: string): readonly number[] | undefined {
    const req = this.active.get(requestId);
    return req && [...req.prompt, ...req.output];
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
    if (this.checked) checkInvariants(this);
  }

  private settingsFor(index: number, limits: EngineLimits): EngineSettings {
    return engineSettings(index, this.engines, limits, {
      mode: this.policy.mode,
      retainState: this.retainState,
      maxWaitMs: this.maxWaitMs,
      prefixCache: this.prefixCache,
      clock: this.clock,
      trace: this.trace !== undefined,
      checkInvariants: this.checked,
    });
  }

  // --- request lifecycle ---

  private start(req: RequestState): void {
    this.active.set(req.id, req);
    this.emitState(req.id, 'admitted');
    const { spec } = req;
    // every engine the request may visit can build its algorithm before a handoff reaches it
    if (spec.ref) for (const name of spec.models) this.byName.get(name)!.deploy(spec.ref);
    this.deliver(spec.models[spec.algorithm.entry - 1], req.firstArrival());
  }

  private end(req: RequestState, status: 'done' | 'failed' | 'cancelled', reason: FinishReason, error?: Error): void {
    if (req.finished) return;
    req.finishReason = reason;
    req.error = error;
    req.endedAt = this.clock.now();
    req.actor.send(status === 'done' ? { type: 'FINISH' } : status === 'failed' ? { type: 'FAIL', error: error ?? new Error('failed') } : { type: 'CANCEL' });
    req.actor.stop();
    // Every engine the request may hold state on lets it go; the one that owned it has its tallies.
    for (const name of new Set(req.spec.models)) {
      const counters = this.byName.get(name)!.release(req.spec, status);
      if (counters) req.counters = counters;
    }
    // tallies ride on finishes: a request ended here, held across a port, has only its handoffs from the moves
    const { hops } = req.whereabouts;
    if (hops > req.counters.handoffs) req.counters = { ...req.counters, handoffs: hops };
    this.emitState(req.id, status);
    const wasActive = this.active.delete(req.id);
    this.completed++;
    const result = req.result();
    this.trace?.emit(requestEndEvent(result));
    if (wasActive) this.startWaiting();
    try {
      req.onEnd?.(result);
    } finally {
      req.resolve(result);
    }
  }

  private startWaiting(): void {
    while (this.active.size < this.maxConcurrency && this.entryQueue.length > 0) {
      this.start(this.entryQueue.shift()!);
    }
  }

  cascade<T>(fn: () => T): T {
    this.cascades.enter();
    try {
      return fn();
    } finally {
      this.cascades.leave();
    }
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
      // every engine, threads and remotes too, in the config's model order: the timeline lays its lanes out (and colours them) by it
      thresholds: Object.fromEntries(this.engines.map((e) => [e.name, e.threshold])),
      maxWaitMs: Number.isFinite(this.maxWaitMs) ? this.maxWaitMs : -1,
    });
  }

  private validateThresholds(thresholds: number[], maxWaitMs = this.maxWaitMs): void {
    validateThresholds(this.mode, this.engines, thresholds, this.maxConcurrency, maxWaitMs);
  }
}
