// The entry and its sub-servers: admits requests, routes every step's result, moves requests between models.
import { createActor } from 'xstate';
import { standardReceive, type Handoff, type ModelId, type TokenSignals } from '../../shared/algorithm.ts';
import type { LocalStatus, TraceSink } from '../../shared/trace.ts';
import { isFinalLocal, type LocalEvent } from '../actors/localRequestMachine.ts';
import { requestMachine } from '../actors/requestMachine.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import { GREEDY, type ModelRunner } from '../runner/modelRunner.ts';
import { LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { checkFeasible, type SchedulingMode } from '../scheduler/schedulingMode.ts';
import { checkInvariants } from './invariants.ts';
import { LocalRequest } from './localRequest.ts';
import { routeRow } from './routeRow.ts';
import { RequestState, type FinishReason, type RequestResult, type SubmitOptions } from './requestState.ts';
import { SubServer, type Batch, type SubServerOptions, type SubServerOwner } from './subServer.ts';

export interface ClusterModel extends Omit<SubServerOptions, 'maxBatch' | 'threshold' | 'kvCapacityTokens'> {
  maxBatch?: number;
  threshold?: number;
  kvCapacityTokens?: number;
}

export interface ClusterOptions {
  clock: Clock;
  models: readonly ClusterModel[];
  mode?: SchedulingMode;
  /** false: every return is a new request that re-prefills its whole context (standard serving). */
  retainState?: boolean;
  /** Longest a ready request waits for its threshold, in clock ms (async-delayed); default 100. */
  maxWaitMs?: number;
  /** N: requests decoding at once; the rest wait at the entry. */
  maxConcurrency?: number;
  /** Requests allowed to wait at the entry before submit refuses with "overloaded". */
  maxQueue?: number;
  trace?: TraceSink;
  /** Debug mode: check every invariant after every batch (tests and the stress suite). */
  checkInvariants?: boolean;
  /**
   * Most lookahead steps a row may ask of a runner that can take them (ModelRunner.maxAhead): the
   * runner decodes a row on without a round trip while the lane's rows mostly stay. Async modes
   * only: a sync mode's barrier is one step. Default 0 (off).
   */
  lookahead?: number;
}

export interface RequestHandle {
  readonly id: string;
  readonly done: Promise<RequestResult>;
  cancel(): void;
}

export interface LaneStats {
  name: string;
  threshold: number;
  ready: number;
  running: number;
  waitingAdmission: number;
  pendingReturn: number;
  executing: boolean;
  kvBytes: number;
  kvReservedBytes: number;
  batches: number;
  rows: number;
  admissions: number;
  evictions: number;
  busyMs: number;
  /** Row results taken from lookahead (included in rows). */
  aheadRows: number;
}

const END_EVENT: Record<'done' | 'failed' | 'cancelled', LocalEvent> = {
  done: { type: 'FINISH' },
  failed: { type: 'FAIL' },
  cancelled: { type: 'CANCEL' },
};

export class Cluster implements SubServerOwner {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  readonly lanes: SubServer[];
  readonly retainState: boolean;
  maxWaitMs: number;
  readonly maxConcurrency: number;
  readonly maxQueue: number;
  private readonly byName = new Map<string, SubServer>();
  private readonly active = new Map<string, RequestState>();
  private readonly entryQueue: RequestState[] = [];
  private readonly trace: TraceSink | undefined;
  private batchSeq = 0;
  private requestSeq = 0;
  private inWave = false;
  private readonly invariantState: Map<string, number> | null;
  /** Committed output tokens over the cluster's life. */
  committed = 0;
  completed = 0;

  constructor(opts: ClusterOptions) {
    this.clock = opts.clock;
    this.policy = new LaunchPolicy(opts.mode ?? 'async-delayed');
    this.retainState = opts.retainState ?? true;
    this.maxWaitMs = opts.maxWaitMs ?? 100;
    this.maxConcurrency = opts.maxConcurrency ?? Infinity;
    this.maxQueue = opts.maxQueue ?? Infinity;
    this.trace = opts.trace;
    this.invariantState = opts.checkInvariants ? new Map() : null;
    const lookahead = this.policy.mode.startsWith('async') ? (opts.lookahead ?? 0) : 0;
    if (!(Number.isInteger(lookahead) && lookahead >= 0)) throw new TokenRouterError('invalid_request', `lookahead must be an integer ≥ 0, got ${opts.lookahead}`, 'lookahead');
    if (opts.models.length === 0) throw new TokenRouterError('invalid_request', 'a cluster needs at least one model', 'models');
    this.lanes = opts.models.map(
      (m, i) =>
        new SubServer(
          i,
          { name: m.name, runner: m.runner, maxBatch: m.maxBatch ?? 64, threshold: m.threshold ?? 1, kvCapacityTokens: m.kvCapacityTokens ?? Infinity, lookahead },
          this,
        ),
    );
    for (const lane of this.lanes) {
      if (this.byName.has(lane.name)) throw new TokenRouterError('invalid_request', `model "${lane.name}" is listed twice`, 'models');
      if (!(lane.maxBatch >= 1)) throw new TokenRouterError('invalid_request', `maxBatch of ${lane.name} must be ≥ 1`, 'maxBatch');
      this.byName.set(lane.name, lane);
      this.watchRunner(lane, lane.runner);
    }
    this.validateThresholds(this.lanes.map((l) => l.threshold));
    this.emitConfig();
  }

  get mode(): SchedulingMode {
    return this.policy.mode;
  }

  lane(name: string): SubServer | undefined {
    return this.byName.get(name);
  }

  nextBatchId(): number {
    return ++this.batchSeq;
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
    const lanes = alg.models.map((name) => {
      const lane = this.byName.get(name);
      if (!lane) throw new TokenRouterError('not_found', `algorithm ${alg.name} needs model "${name}", which this server does not run`, 'model');
      return lane;
    });
    if (!(alg.entry >= 1 && alg.entry <= lanes.length)) {
      throw new TokenRouterError('invalid_request', `algorithm ${alg.name}: entry model ${alg.entry} is not in 1..${lanes.length}`, 'model');
    }
    if (opts.prompt.length === 0) throw new TokenRouterError('invalid_request', 'the prompt is empty', 'prompt');
    if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 1) {
      throw new TokenRouterError('invalid_request', `max_tokens must be an integer ≥ 1, got ${opts.maxTokens}`, 'max_tokens');
    }
    const maxContext = Math.min(...lanes.map((l) => l.runner.info.maxContext));
    if (opts.prompt.length >= maxContext) {
      throw new TokenRouterError('too_large', `the prompt has ${opts.prompt.length} tokens; the context window is ${maxContext}`, 'prompt');
    }
    if (this.active.size >= this.maxConcurrency && this.entryQueue.length >= this.maxQueue) {
      throw new TokenRouterError('overloaded', `admission queue is full (${this.maxQueue} waiting)`, null);
    }
    const id = opts.id ?? `req-${++this.requestSeq}`;
    if (this.active.has(id)) throw new TokenRouterError('invalid_request', `request id ${id} is already in flight`, 'id');
    let resolve!: (r: RequestResult) => void;
    const done = new Promise<RequestResult>((r) => (resolve = r));
    const req = new RequestState(
      id,
      alg as SubmitOptions['algorithm'],
      lanes,
      opts.prompt,
      opts.maxTokens,
      Math.max(0, Math.min(opts.minTokens ?? 0, opts.maxTokens)),
      { ...GREEDY, ...opts.sampling },
      this.clock.now(),
      opts.onToken,
      opts.onEnd,
      resolve,
    );
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

  setThresholds(thresholds: Readonly<Record<string, number>>): void {
    const next = this.lanes.map((l) => thresholds[l.name] ?? l.threshold);
    this.validateThresholds(next);
    this.lanes.forEach((l, i) => {
      l.threshold = next[i];
      l.dirty = true;
    });
    this.emitConfig();
    this.flush();
  }

  /** Takes a sub-server down (its batches fail) or brings it back. */
  setDown(name: string, down: boolean): void {
    const lane = this.byName.get(name);
    if (!lane) throw new TokenRouterError('not_found', `no model "${name}"`, 'model');
    lane.down = down;
  }

  /**
   * A model's runner died and took every cache with it: requests that hold state there fail with a
   * clear error (the rest keep going), and the lane refuses work until `replaceRunner`.
   */
  failLane(name: string, error: Error): number {
    const lane = this.byName.get(name);
    if (!lane) throw new TokenRouterError('not_found', `no model "${name}"`, 'model');
    lane.down = true;
    const hit = [...this.active.values()].filter((req) => req.locals.some((l, m) => l && req.lane(m) === lane));
    for (const req of hit) this.end(req, 'failed', 'error', new TokenRouterError('unavailable', `model ${name} failed: ${error.message}`, 'model'));
    this.flush();
    return hit.length;
  }

  /** Puts a restarted runner in place and lets the lane take work again. */
  replaceRunner(name: string, runner: ModelRunner): void {
    const lane = this.byName.get(name);
    if (!lane) throw new TokenRouterError('not_found', `no model "${name}"`, 'model');
    lane.runner = runner;
    lane.down = false;
    lane.dirty = true;
    this.watchRunner(lane, runner);
    this.flush();
  }

  /**
   * What a runner reports while it goes on: caches it lost (a remote replica died), whose requests
   * fail and nothing else; and a new KV size (replicas joined or left), which admission follows.
   */
  private watchRunner(lane: SubServer, runner: ModelRunner): void {
    runner.onCapacityChange?.((tokens) => {
      if (lane.runner !== runner) return;
      for (const local of lane.resize(tokens)) {
        this.end(local.req, 'failed', 'error', new TokenRouterError('unavailable', `model ${lane.name} now holds ${tokens} KV tokens; this request needs ${local.req.maxLength}`, 'model'));
      }
      this.admitWaiting(lane);
      this.flush();
    });
    runner.onCachesLost?.((cacheIds, error) => {
      if (lane.runner !== runner) return;
      const ids = new Set(cacheIds);
      for (const req of [...this.active.values()]) {
        // a row inside a running step is reported by that step's output instead
        const hit = req.locals.some((l, m) => l && req.lane(m) === lane && l.hasCache && !l.inBatch && ids.has(l.cacheId));
        if (hit) this.end(req, 'failed', 'error', this.lostError(lane, error));
      }
      this.flush();
    });
  }

  private lostError(lane: SubServer, error: Error): TokenRouterError {
    return new TokenRouterError('unavailable', `model ${lane.name} cannot go on with this request: ${error.message}`, 'model');
  }

  laneStats(): LaneStats[] {
    return this.lanes.map((l) => ({
      name: l.name,
      threshold: l.threshold,
      ready: l.readyCount,
      running: l.readyCount + l.inFlightRows,
      waitingAdmission: l.waitingAdmission,
      pendingReturn: l.pendingReturnCount,
      executing: l.executing,
      kvBytes: l.pool.usedBytes,
      kvReservedBytes: l.pool.reservedBytes,
      batches: l.stats.batches,
      rows: l.stats.rows,
      admissions: l.stats.admissions,
      evictions: l.stats.evictions,
      busyMs: l.stats.busyMs,
      aheadRows: l.stats.aheadRows,
    }));
  }

  /** Requests in flight, for invariant checks: where each one is on every lane. */
  *activeRequests(): IterableIterator<RequestState> {
    yield* this.active.values();
  }

  // --- request lifecycle ---

  private start(req: RequestState): void {
    req.actor = createActor(requestMachine);
    req.actor.start();
    this.active.set(req.id, req);
    this.emitState(req.id, null, 'admitted');
    const entry = req.algorithm.entry;
    req.known[entry] = req.tokens.length;
    this.place(req, entry);
  }

  /** Puts the request on `model`: resume a pending-return local, or admit a new one. */
  private place(req: RequestState, model: ModelId): void {
    const lane = req.lane(model);
    let local = req.locals[model];
    if (local) {
      lane.resumed(local);
      local.stepsHere = 0;
      if (local.hasCache) {
        this.move(local, { type: 'RETURN' });
        lane.enqueue(local);
        return;
      }
      this.move(local, { type: 'REQUEUE' });
    } else {
      local = new LocalRequest(req, model);
      req.locals[model] = local;
      this.emitLocal(local, 'queued');
    }
    let admitted: boolean;
    try {
      admitted = lane.admit(local);
    } catch (e) {
      this.end(req, 'failed', 'error', new TokenRouterError('too_large', (e as Error).message, 'max_tokens'));
      return;
    }
    if (admitted) {
      this.move(local, { type: 'ADMIT' });
      lane.enqueue(local);
    }
  }

  /** A row came back for a request that ended (cancelled, failed elsewhere) while its step ran: its cache can go now. */
  private endedMeanwhile(local: LocalRequest): boolean {
    this.inWave = true;
    if (!local.req.finished) return false;
    const lane = local.req.lane(local.model);
    lane.dropCache(local);
    this.admitWaiting(lane);
    return true;
  }

  onRowLost(local: LocalRequest, error: Error): void {
    if (this.endedMeanwhile(local)) return;
    this.end(local.req, 'failed', 'error', this.lostError(local.req.lane(local.model), error));
  }

  /** Applies routeRow's decision for one row: the only place a step's result changes request state. */
  onRowResult(local: LocalRequest, sig: TokenSignals, batch: Batch): void {
    if (this.endedMeanwhile(local)) return;
    const req = local.req;
    const lane = req.lane(local.model);
    const m = local.model;
    local.stepsHere++;
    const d = routeRow(
      { requestId: req.id, algorithm: req.algorithm, model: m, models: req.lanes.length, tokens: req.tokens, known: req.known, stepsHere: local.stepsHere, generated: req.generated, drawSeed: req.drawSeed, meta: req.meta, eosTokenId: lane.runner.info.eosTokenId, maxLength: req.maxLength },
      sig,
    );
    if (d.kind === 'fail') return this.algorithmFailed(req, d.fn, d.message);
    if (d.commit !== undefined && !this.commit(req, sig, m, d.kind === 'handoff')) return;
    if (d.kind === 'finish') return this.end(req, 'done', d.reason);
    if (d.kind === 'stay') return lane.enqueue(local);
    const { handoff, to: target } = d;
    if (!handoff.keep) req.discarded++;
    req.known[m] = req.tokens.length;
    req.handoffs++;
    this.trace?.emit({ type: 'handoff', t: this.clock.now(), requestId: req.id, from: lane.name, to: req.lane(target).name, batchId: batch.id, tokens: handoff.tokens.length, kept: handoff.keep, at: d.at });
    if (this.retainState) {
      this.move(local, { type: 'HANDOFF' });
      lane.markPendingReturn(local);
      // Its cache just became evictable: a request waiting for memory here may now fit.
      if (lane.waitingAdmission > 0) this.admitWaiting(lane);
    } else {
      this.move(local, { type: 'FINISH' });
      lane.dropCache(local);
      req.locals[m] = undefined;
      this.admitWaiting(lane);
    }
    this.receive(req, target, handoff);
  }

  private receive(req: RequestState, target: ModelId, handoff: Handoff<unknown>): void {
    try {
      req.meta = (req.algorithm.receive ?? standardReceive)(handoff).meta;
    } catch (e) {
      return this.algorithmFailed(req, 'receive', e);
    }
    req.known[target] = handoff.anchor + handoff.tokens.length;
    req.owner = target;
    this.place(req, target);
  }

  /** Appends a committed token and tells the client; false when the client's callback ended the request. */
  private commit(req: RequestState, sig: TokenSignals, model: ModelId, atHandoff: boolean): boolean {
    const lane = req.lane(model);
    const token = sig.token;
    req.tokens.push(token);
    req.producedBy.push(model);
    this.committed++;
    if (req.firstTokenAt === null) {
      req.firstTokenAt = this.clock.now();
      req.status = 'streaming';
      req.actor?.send({ type: 'FIRST_TOKEN' });
      this.emitState(req.id, null, 'streaming');
    }
    try {
      req.onToken?.(token, lane.name, req.producedBy.length - 1, sig, atHandoff);
    } catch (e) {
      this.end(req, 'failed', 'error', e as Error);
      return false;
    }
    return !req.finished; // the callback may have cancelled it
  }

  private algorithmFailed(req: RequestState, fn: string, e: unknown): void {
    const msg = e instanceof Error ? e.message : String(e);
    this.end(req, 'failed', 'error', new TokenRouterError('algorithm_error', `${req.algorithm.name}.${fn}: ${msg}`));
  }

  private end(req: RequestState, status: 'done' | 'failed' | 'cancelled', reason: FinishReason, error?: Error): void {
    if (req.finished) return;
    req.status = status;
    req.finishReason = reason;
    req.error = error;
    req.endedAt = this.clock.now();
    for (let m = 1; m < req.locals.length; m++) {
      const local = req.locals[m];
      if (!local) continue;
      const lane = req.lane(m);
      if (!isFinalLocal(local.status)) this.move(local, END_EVENT[status]);
      lane.dequeue(local);
      // A cache inside a running step is released when that step returns (onRowResult).
      if (!local.inBatch) {
        lane.dropCache(local);
        this.admitWaiting(lane);
      }
      req.locals[m] = undefined;
    }
    if (req.actor) {
      req.actor.send(status === 'done' ? { type: 'FINISH' } : status === 'failed' ? { type: 'FAIL', error: error ?? new Error('failed') } : { type: 'CANCEL' });
      req.actor.stop();
    }
    this.emitState(req.id, null, status);
    const wasActive = this.active.delete(req.id);
    this.completed++;
    const result = req.result();
    if (this.trace) {
      const runs: { model: string; count: number }[] = [];
      for (const name of result.producedBy) {
        const last = runs[runs.length - 1];
        if (last && last.model === name) last.count++;
        else runs.push({ model: name, count: 1 });
      }
      this.trace.emit({
        type: 'request-end',
        t: req.endedAt,
        requestId: req.id,
        status,
        tokens: result.tokens,
        runs,
        handoffs: req.handoffs,
        admittedAt: req.submittedAt,
        firstTokenAt: req.firstTokenAt,
      });
    }
    if (wasActive) this.startWaiting();
    try {
      req.onEnd?.(result);
    } finally {
      req.resolve(result);
    }
  }

  private startWaiting(): void {
    while (this.active.size < this.maxConcurrency && this.entryQueue.length > 0) this.start(this.entryQueue.shift()!);
  }

  private admitWaiting(lane: SubServer): void {
    for (const local of lane.admitWaiting()) {
      this.move(local, { type: 'ADMIT' });
      lane.enqueue(local);
    }
  }

  // --- waves: wake lanes once per batch, not once per request ---

  onBatchFailed(batch: Batch, error: Error): void {
    this.inWave = true;
    const lane = this.lanes[batch.lane];
    for (const local of batch.locals) {
      const req = local.req;
      if (!req.finished) this.end(req, 'failed', 'error', new TokenRouterError('runner_error', `${lane.name} step failed: ${error.message}`));
      else lane.dropCache(local);
    }
  }

  onWaveEnd(): void {
    this.inWave = false;
    this.flush();
    if (this.invariantState) checkInvariants(this, this.invariantState);
  }

  onBatchReturned(batch: Batch, _out: unknown, _wallMs: number): void {
    const lane = this.lanes[batch.lane];
    if (this.trace) {
      this.trace.emit({
        type: 'batch',
        model: lane.name,
        batchId: batch.id,
        requestIds: batch.rows.map((r) => r.requestId),
        phase: batch.phase,
        tokens: batch.tokens,
        start: batch.start,
        end: this.clock.now(),
        ...(batch.steps > 1 ? { steps: batch.steps, aheadRows: batch.aheadRows } : {}),
      });
    }
    this.policy.finished();
    this.inWave = false;
    this.flush();
    if (this.invariantState) checkInvariants(this, this.invariantState);
  }

  /** Sends one WORK per lane that got ready requests, then lets a sync barrier open its next round. */
  private flush(): void {
    if (this.inWave) return;
    for (const lane of this.lanes) {
      if (!lane.dirty) continue;
      lane.dirty = false;
      if (this.trace) this.trace.emit({ type: 'queue', t: this.clock.now(), model: lane.name, length: lane.readyCount });
      // An executing lane looks at its queue when its batch returns, unless it may pipeline another.
      // Either way, new work asks a batch still looking ahead to hand back what it has: a pipelined
      // batch would otherwise wait behind its remaining passes at the model.
      const fresh = lane.executing && lane.newWork > 0;
      if (!lane.executing || lane.canPipeline) lane.actor.send({ type: 'WORK' });
      if (fresh) lane.yieldAhead();
    }
    for (const i of this.policy.openRound(this.lanes)) if (!this.lanes[i].executing) this.lanes[i].actor.send({ type: 'GATE' });
  }

  private move(local: LocalRequest, event: LocalEvent): void {
    const next = local.send(event);
    if (this.trace) this.emitLocal(local, next);
  }

  private emitLocal(local: LocalRequest, state: LocalStatus): void {
    this.trace?.emit({ type: 'request-state', t: this.clock.now(), requestId: local.req.id, model: local.req.lane(local.model).name, state });
  }

  private emitState(requestId: string, model: string | null, state: string): void {
    this.trace?.emit({ type: 'request-state', t: this.clock.now(), requestId, model, state });
  }

  private emitConfig(): void {
    this.trace?.emit({
      type: 'config',
      t: this.clock.now(),
      mode: this.mode,
      retainState: this.retainState,
      thresholds: Object.fromEntries(this.lanes.map((l) => [l.name, l.threshold])),
      maxWaitMs: Number.isFinite(this.maxWaitMs) ? this.maxWaitMs : -1,
    });
  }

  private validateThresholds(thresholds: number[]): void {
    if (this.mode !== 'async-delayed') return;
    this.lanes.forEach((l, i) => {
      if (thresholds[i] > l.maxBatch) {
        throw new TokenRouterError('infeasible_thresholds', `threshold ${thresholds[i]} of ${l.name} exceeds its max batch ${l.maxBatch}`, 'thresholds');
      }
    });
    if (Number.isFinite(this.maxConcurrency)) checkFeasible(thresholds, this.maxConcurrency, this.lanes.map((l) => l.name));
    // Fewer than N requests are in flight whenever traffic thins out; only a deadline keeps that live.
    if (thresholds.some((t) => t > 1) && !Number.isFinite(this.maxWaitMs)) {
      throw new TokenRouterError('infeasible_thresholds', 'thresholds above 1 need a finite max-wait deadline (maxWaitMs)', 'maxWaitMs');
    }
  }
}
