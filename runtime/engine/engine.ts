// One model's engine: its requests, queues, KV pool and routing; a step reads plan → execute → apply.
import { createActor, type Actor } from 'xstate';
import type { Handoff, TokenSignals } from '../../shared/algorithm.ts';
import type { LocalStatus } from '../../shared/trace.ts';
import { subServerMachine, type SubServerHost } from '../actors/subServerMachine.ts';
import { endEvent, type LocalEvent } from '../actors/localRequestMachine.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner, StepOutput } from '../runner/modelRunner.ts';
import type { LaneView } from '../scheduler/launchPolicy.ts';
import { planBatch, type BatchPlan } from '../scheduler/planBatch.ts';
import { batchEvent, EngineStats, newBatch, type Batch } from './batch.ts';
import { LaneQueues } from './laneQueues.ts';
import { LocalRequest, type RequestSpec } from './localRequest.ts';
import type { EngineEnv, EngineOptions } from './engineEnv.ts';
import type { Arrival } from './messages.ts';
import { laneStats, type LaneStats } from './laneStats.ts';
import { receiveRow, routeRow } from './routeRow.ts';

export class Engine implements SubServerHost, LaneView {
  readonly name: string;
  /** Replaced when a crashed runner is restarted. */
  runner: ModelRunner;
  maxBatch: number;
  threshold: number;
  /** The max-wait deadline; changes with the threshold (the SLO controller moves both). */
  maxWait: number;
  readonly queues: LaneQueues;
  readonly actor: Actor<typeof subServerMachine>;
  readonly stats = new EngineStats();
  /** The requests this engine holds, in any local state. */
  readonly locals = new Map<string, LocalRequest>();
  /** The batch launched and not yet returned. */
  inFlight: Batch | null = null;
  /** The locals of those batches until their row is applied: a cache a step still reads is freed only after it. */
  private readonly stepping = new Set<LocalRequest>();
  /** Ready work arrived during a wave; the host sends one WORK per engine when it ends. */
  dirty = false;
  /** Down: steps fail fast until the runner is replaced. */
  down = false;

  constructor(
    readonly index: number,
    opts: EngineOptions,
    private readonly host: EngineEnv,
  ) {
    this.name = opts.name;
    this.runner = opts.runner;
    this.maxBatch = opts.maxBatch;
    this.threshold = opts.threshold;
    this.maxWait = opts.maxWaitMs;
    const runner = { release: (id: number) => this.runner.release(id), fork: (from: number, to: number, n: number) => this.runner.fork(from, to, n) };
    this.queues = new LaneQueues(opts.kvCapacityTokens, opts.runner.info.kvBytesPerToken, this.stats, runner, opts.prefixCache ?? false);
    this.actor = createActor(subServerMachine, { input: { host: this }, clock: host.clock });
    this.actor.start();
  }

  get info() {
    return this.runner.info;
  }
  /** This engine's figures for /admin/status, /metrics and the benches. */
  laneStats(): LaneStats {
    return laneStats(this);
  }
  setSchedule(threshold: number, maxWaitMs: number): void {
    this.threshold = threshold;
    this.maxWait = maxWaitMs;
    this.dirty = true;
    this.actor.send({ type: 'SCHEDULE' });
  }
  /** A sync barrier granted this engine a launch (the cluster's policy holds the grant). */
  gate(): void {
    if (!this.executing) this.actor.send({ type: 'GATE' });
  }

  get pool() {
    return this.queues.pool;
  }
  get readyCount(): number {
    return this.queues.readyCount;
  }
  get executing(): boolean {
    return this.inFlight !== null;
  }
  /** In a batch now running (a lifecycle state, running or ended, does not say it). */
  isStepping(local: LocalRequest): boolean {
    return this.stepping.has(local);
  }
  get inFlightRows(): number {
    return this.inFlight?.locals.length ?? 0;
  }

  // --- SubServerHost: the lane actor decides when step() runs ---
  hasWork(): boolean {
    return this.readyCount > 0;
  }
  mayLaunch(): boolean {
    return this.inFlight === null && this.host.policy.mayLaunch(this);
  }
  mayLaunchAtDeadline(): boolean {
    return this.inFlight === null && this.host.policy.mayLaunchAtDeadline(this);
  }
  maxWaitMs(): number {
    return this.maxWait;
  }

  // --- the step: plan → execute → apply ---

  step(): void {
    const ready = this.queues.readyView(this.maxBatch);
    const plan = planBatch(ready.rows, { maxBatch: this.maxBatch });
    const batch = this.start(plan, ready.locals);
    let out: StepOutput | Promise<StepOutput>;
    try {
      if (this.down) throw new Error(`sub-server ${this.name} is down`);
      out = this.runner.step(batch.rows);
    } catch (e) {
      this.host.clock.setTimeout(() => this.fail(batch, e as Error), 0);
      return;
    }
    if (out instanceof Promise) out.then((o) => this.apply(batch, o, performance.now() - batch.wall0), (e: Error) => this.fail(batch, e));
    else {
      // a simulated runner answers at once and says how long the step takes on the clock
      const o = out;
      const wall = performance.now() - batch.wall0;
      this.host.clock.setTimeout(() => this.apply(batch, o, wall), o.durationMs ?? 0);
    }
  }

  /** Takes the planned rows off the ready queue and records the batch as in flight. */
  private start(plan: BatchPlan, candidates: readonly LocalRequest[]): Batch {
    const batch = newBatch(this.host.nextBatchId(), this.index, plan, plan.rows.map((i) => candidates[i]), this.host.clock.now());
    for (const local of batch.locals) {
      this.queues.unready(local);
      this.stepping.add(local);
      batch.cachedTokens += local.cachedPrefix;
      local.cachedPrefix = 0;
    }
    this.inFlight = batch;
    this.host.policy.launched(this);
    return batch;
  }

  /** The only place a step's results change state: per row, routeRow's decision is applied. */
  private apply(batch: Batch, out: StepOutput, wallMs: number): void {
    this.host.waveStart();
    const st = this.stats;
    batch.resultAt = this.host.clock.now();
    batch.modelMs += out.modelMs ?? out.durationMs ?? 0;
    st.batches++;
    st.rows += batch.rows.length;
    st.tokensFed += batch.tokens;
    this.settle(batch, wallMs);
    const { locals, rows } = batch;
    for (let i = 0; i < locals.length; i++) {
      const local = locals[i];
      this.stepping.delete(local);
      this.queues.fed(local, rows[i].tokens.length);
      this.applyRow(local, out.rows[i], batch);
    }
    this.returned(batch);
  }

  /** One row's result: route it (pure), then commit, hand off or finish. */
  private applyRow(local: LocalRequest, sig: TokenSignals, batch: Batch): void {
    if (this.endedMeanwhile(local)) return;
    const { spec } = local;
    local.stepsHere++;
    const d = routeRow(local, sig, this.runner.info.eosTokenId);
    if (d.kind === 'fail') return this.finish(local, 'failed', 'error', new TokenRouterError('algorithm_error', `${spec.algorithm.name}.${d.fn}: ${d.message}`));
    if (d.commit !== undefined && !this.commit(local, sig, d.kind === 'handoff')) return;
    if (d.kind === 'finish') return this.finish(local, 'done', d.reason);
    if (d.kind === 'stay') return this.enqueue(local);
    this.sendOut(local, d.handoff, batch, d.at);
  }

  /** Appends a committed token and tells the entry; false when that ended the request (a stop string, a cancel). */
  private commit(local: LocalRequest, sig: TokenSignals, atHandoff: boolean): boolean {
    local.tokens.push(sig.token);
    this.host.commit({ type: 'commit', requestId: local.id, index: local.generated - 1, token: sig.token, model: local.model, signals: sig, atHandoff, counters: local.counters });
    return !local.ended;
  }

  /** The request leaves for a peer: it keeps its state here (pending-return) unless standard serving drops it. */
  private sendOut(local: LocalRequest, handoff: Handoff<unknown>, batch: Batch, at: number): void {
    const { spec, model: m } = local;
    const to = spec.models[handoff.to - 1];
    if (!handoff.keep) local.counters.discarded++;
    local.counters.handoffs++;
    const known = local.known.slice();
    known[m] = local.tokens.length;
    this.host.trace?.emit({ type: 'handoff', t: this.host.clock.now(), requestId: local.id, from: this.name, to, batchId: batch.id, tokens: handoff.tokens.length, kept: handoff.keep, at });
    if (this.host.retainState) {
      this.move(local, { type: 'HANDOFF' });
      this.queues.markPendingReturn(local);
      // Its cache just became evictable: a request waiting for memory here may now fit.
      if (this.queues.waitingAdmission > 0) this.admitWaiting();
    } else {
      this.move(local, { type: 'FINISH' });
      this.forget(local);
    }
    // Standard serving: the peer may hold nothing of this request any more, so the whole context goes too.
    this.host.deliver(to, { spec, handoff, known, counters: local.counters, ...(this.host.retainState ? {} : { context: local.tokens }) });
  }

  /** A request arrives, from the entry (first placement) or from a peer: receive it and queue it here. */
  arrive(a: Arrival): void {
    const { spec, handoff } = a;
    const got = receiveRow(spec.algorithm, handoff);
    if ('fail' in got) return this.host.finish({ type: 'finish', requestId: spec.id, status: 'failed', reason: 'error', error: new TokenRouterError('algorithm_error', `${spec.algorithm.name}.receive: ${got.fail}`) });
    const meta = got.meta;
    const known = a.known;
    known[handoff.to] = handoff.anchor + handoff.tokens.length;
    let local = this.locals.get(spec.id);
    if (local) {
      // Back from a peer: append the unseen suffix and resume, with no re-admission while the cache is held.
      local.tokens.push(...handoff.tokens);
      local.known = known;
      local.meta = meta;
      local.counters = a.counters;
      local.stepsHere = 0;
      this.queues.resumed(local);
      if (local.hasCache) {
        this.move(local, { type: 'RETURN' });
        return this.enqueue(local);
      }
      this.move(local, { type: 'REQUEUE' });
    } else {
      // Only after this engine restarted: the sender still counted on the KV that died with it.
      if (!a.context && handoff.anchor !== 0) return this.host.finish({ type: 'finish', requestId: spec.id, status: 'failed', reason: 'error', error: new TokenRouterError('unavailable', `model ${this.name} restarted and lost this request's state (it came back at position ${handoff.anchor})`, 'model') });
      local = new LocalRequest(spec, handoff.to, (a.context ?? handoff.tokens).slice(), known, meta, a.counters);
      this.locals.set(spec.id, local);
      this.emitLocal(local, 'queued');
    }
    try {
      if (!this.queues.admit(local)) return;
    } catch (e) {
      // only a request that can never fit is refused here; anything else is a bug and stays loud
      if (!(e instanceof TokenRouterError)) throw e;
      return this.finish(local, 'failed', 'error', new TokenRouterError(e.code, `${this.name}: ${e.message}`, e.param));
    }
    this.move(local, { type: 'ADMIT' });
    this.enqueue(local);
  }

  /**
   * The entry ended the request: drop what this engine holds of it. Returns its tallies when this
   * engine owned it (they are whole only there). A cache inside a running step goes when the step returns.
   */
  release(spec: Pick<RequestSpec, 'id'>, status: 'done' | 'failed' | 'cancelled'): LocalRequest['counters'] | null {
    const local = this.locals.get(spec.id);
    if (!local) return null;
    const counters = local.owned ? local.counters : null;
    if (!local.ended) this.move(local, endEvent(status));
    this.forget(local);
    return counters;
  }

  /**
   * The engine of model `name` restarted with nothing: the requests decoding here forget what it had
   * seen, so their next handoff there carries the whole sequence and it re-prefills (recompute).
   */
  peerLost(name: string): void {
    for (const local of this.locals.values()) {
      const m = local.spec.models.indexOf(name) + 1;
      if (m > 0 && local.owned) local.known[m] = 0;
    }
  }

  /** Fails every request that holds state here (the runner died with their caches). */
  failAll(error: Error): number {
    const held = [...this.locals.values()].filter((l) => !l.ended);
    for (const l of held) this.finish(l, 'failed', 'error', new TokenRouterError('unavailable', `model ${this.name} failed: ${error.message}`, 'model'));
    this.queues.forgetPrefixes();
    return held.length;
  }

  private finish(local: LocalRequest, status: 'done' | 'failed', reason: 'stop' | 'length' | 'error', error?: Error): void {
    this.host.finish({ type: 'finish', requestId: local.id, status, reason, error, committed: local.generated, ...(local.owned ? { counters: local.counters } : {}) });
  }

  /** A row came back for a request that ended while its step ran: its cache can go now. */
  private endedMeanwhile(local: LocalRequest): boolean {
    if (!local.ended) return false;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
    return true;
  }

  private forget(local: LocalRequest): void {
    this.queues.dequeue(local);
    if (this.locals.get(local.id) === local) this.locals.delete(local.id);
    if (this.stepping.has(local)) return;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
  }

  private enqueue(local: LocalRequest): void {
    this.queues.enqueue(local);
    this.dirty = true;
  }

  admitWaiting(): void {
    for (const local of this.queues.admitWaiting()) {
      this.move(local, { type: 'ADMIT' });
      this.enqueue(local);
    }
  }

  private move(local: LocalRequest, event: LocalEvent): void {
    const next = local.send(event);
    if (this.host.trace) this.emitLocal(local, next);
  }

  private emitLocal(local: LocalRequest, state: LocalStatus): void {
    this.host.trace?.emit({ type: 'request-state', t: this.host.clock.now(), requestId: local.id, model: this.name, state });
  }

  // --- batches ending ---

  private settle(batch: Batch, wallMs: number): void {
    if (this.inFlight === batch) this.inFlight = null;
    this.stats.busyMs += this.host.clock.now() - batch.start;
    this.stats.runnerWallMs += wallMs;
  }

  private returned(batch: Batch): void {
    this.host.trace?.emit(batchEvent(batch, this.name, this.host.clock.now()));
    this.actor.send({ type: 'BATCH_DONE' });
    this.host.waveEnd();
  }

  private fail(batch: Batch, error: Error): void {
    this.host.waveStart();
    this.settle(batch, performance.now() - batch.wall0);
    for (const local of batch.locals) {
      this.stepping.delete(local);
      if (!this.endedMeanwhile(local)) this.finish(local, 'failed', 'error', new TokenRouterError('runner_error', `${this.name} step failed: ${error.message}`));
    }
    this.returned(batch);
  }
}
