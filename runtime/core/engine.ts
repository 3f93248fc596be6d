// One model's engine: its requests, queues, KV pool and routing; a step reads plan → execute → apply.
import type { Handoff, TokenSignals } from '../../shared/algorithm.ts';
import type { LocalStatus } from '../../shared/trace.ts';
import { endEvent, LOCAL_EVENTS, type LocalEvent } from './localRequestMachine.ts';
import { TokenRouterError } from '../errors.ts';
import { Later } from '../clock/later.ts';
import type { ModelRunner, StepOutput } from '../runner/modelRunner.ts';
import { planBatch, type BatchPlan } from './planBatch.ts';
import { batchEvent, EngineStats, newBatch, type Batch } from './batch.ts';
import { LaneQueues } from './laneQueues.ts';
import { LocalRequest, type RequestSpec } from './localRequest.ts';
import type { EngineEnv, EngineOptions } from './engineEnv.ts';
import type { Arrival, EngineEvent, EngineOutputs } from './messages.ts';
import { laneStats, type LaneStats } from './laneStats.ts';
import { receiveRow, routeRow } from './routeRow.ts';
import { refuseArrival } from './refuseArrival.ts';
import type { LaneView } from './servingPolicy.ts';
import { acceptCommitted, heldForGrammar, maskRows, newGrammarState } from './constrainRows.ts';

export class Engine implements LaneView {
  readonly name: string;
  /** Replaced when a crashed runner is restarted. */
  runner: ModelRunner;
  maxBatch: number;
  /** Tokens one step feeds at most, all rows together: a longer prompt is fed in chunks across steps. */
  maxStepTokens: number;
  threshold: number;
  readonly queues: LaneQueues;
  /** The batch in flight, from its launch until its rows are applied. */
  inFlight: Batch | null = null;
  readonly stats = new EngineStats();
  /** The requests this engine holds, in any local state. */
  readonly locals = new Map<string, LocalRequest>();
  /** What this engine produced since the host last took it: events for the entry in order, handoffs for peers. */
  private events: EngineEvent[] = [];
  private sent: EngineOutputs['sent'] = [];

  constructor(
    readonly index: number,
    opts: EngineOptions,
    private readonly host: EngineEnv,
  ) {
    this.name = opts.name;
    this.runner = opts.runner;
    this.maxBatch = opts.maxBatch;
    this.maxStepTokens = opts.maxStepTokens;
    this.threshold = opts.threshold;
    const runner = { release: (id: number) => this.runner.release(id), fork: (from: number, to: number, n: number) => this.runner.fork(from, to, n) };
    this.queues = new LaneQueues(opts.kvCapacityTokens, opts.runner.info.kvBytesPerToken, this.stats, runner, opts.prefixCache ?? false, this.locals);
  }

  get info() {
    return this.runner.info;
  }
  /** This engine's figures for /admin/status, /metrics and the benches. */
  laneStats(): LaneStats {
    return laneStats(this);
  }

  get pool() {
    return this.queues.pool;
  }
  get readyCount(): number {
    return this.queues.readyCount;
  }
  /** A batch in flight (the loop's lane actor is executing or failing). */
  get executing(): boolean {
    return this.host.loop.executing;
  }
  /** Down (a state of the loop's lane actor): steps fail at once until the runner is replaced. */
  get down(): boolean {
    return this.host.loop.down;
  }
  /** In the batch now running, its row not yet applied: its cache is freed only after that. */
  isStepping(local: LocalRequest): boolean {
    const b = this.inFlight;
    return b !== null && b.locals.indexOf(local, b.applied) >= 0;
  }
  get inFlightRows(): number {
    return this.inFlight?.locals.length ?? 0;
  }

  // --- the step: plan → execute → apply ---

  /** Plans a batch and starts the runner on it (the loop launches it); `apply` (or `fail`) turns its answer into outputs. */
  step(down: boolean): { batch: Batch; result: PromiseLike<StepOutput> } {
    // under a token budget decode rows go first wherever they wait in the FIFO, so the planner sees it all
    const ready = this.queues.readyView(Number.isFinite(this.maxStepTokens) ? Infinity : this.maxBatch);
    const plan = planBatch(ready.rows, { maxBatch: this.maxBatch, maxStepTokens: this.maxStepTokens });
    const batch = this.start(plan, ready.locals);
    try {
      if (down) throw new Error(`sub-server ${this.name} is down`);
      const result = this.runner.step(batch.rows);
      // the runner's own call: all of a simulated runner's work, the launch of a real one's
      batch.wallMs = performance.now() - batch.wall0;
      return { batch, result };
    } catch (e) {
      // a step that cannot start fails as one that ran would, after the launch, on the clock
      return { batch, result: Later.failAfter(this.host.clock, 0, e as Error) };
    }
  }

  /** Takes the planned rows off the ready queue and records the batch as in flight. */
  private start(plan: BatchPlan, candidates: readonly LocalRequest[]): Batch {
    const batch = newBatch(
      this.host.nextBatchId(),
      this.index,
      plan,
      plan.rows.map((i) => candidates[i]),
      this.host.clock.now(),
    );
    this.queues.take(plan.rows);
    for (const local of batch.locals) {
      batch.cachedTokens += local.cachedPrefix;
      local.cachedPrefix = 0;
    }
    maskRows(batch);
    this.inFlight = batch;
    return batch;
  }

  /** The only place a step's results change state: per row, routeRow's decision is applied. Returns what it produced. */
  apply(batch: Batch, out: StepOutput): EngineOutputs {
    const st = this.stats;
    batch.resultAt = this.host.clock.now();
    batch.modelMs += out.modelMs ?? out.durationMs ?? 0;
    st.batches++;
    st.rows += batch.rows.length;
    st.tokensFed += batch.tokens;
    this.settle(batch);
    const { locals, rows } = batch;
    const chunked: LocalRequest[] = [];
    for (let i = 0; i < locals.length; i++) {
      const local = locals[i];
      batch.applied = i + 1;
      const row = rows[i];
      this.queues.fed(local, row.tokens.length);
      // a chunk of a longer feed: its sampled token is not the next one, so it is neither routed nor committed
      if (row.position + row.tokens.length < local.tokens.length) this.chunkFed(local, chunked);
      else this.applyRow(local, out.rows[i], batch);
    }
    // prompts under way keep their place ahead of later ones (a prompt's first token is not pushed back by each new arrival)
    if (chunked.length > 0) this.queues.enqueueFront(chunked);
    return this.returned(batch);
  }

  /** A row fed one chunk of what its cache has not seen: the request stays running and waits for the next chunk's step. */
  private chunkFed(local: LocalRequest, chunked: LocalRequest[]): void {
    if (this.endedMeanwhile(local)) return;
    this.stats.chunks++;
    chunked.push(local);
  }

  /** One row's result: route it (pure), then commit, hand off or finish. */
  private applyRow(local: LocalRequest, sig: TokenSignals, batch: Batch): void {
    if (this.endedMeanwhile(local)) return;
    const { spec } = local;
    local.stepsHere++;
    if (local.grammarError) return this.finish(local, 'failed', 'error', new TokenRouterError('runner_error', `${this.name}: ${local.grammarError.message}`));
    const d = routeRow(local, sig, this.runner.info.eosTokenIds, spec.sampling.stopTokenIds);
    if (d.kind === 'fail')
      return this.finish(local, 'failed', 'error', new TokenRouterError('algorithm_error', `${spec.algorithm.name}.${d.fn}: ${d.message}`));
    if (d.commit !== undefined && !this.commit(local, sig, d.kind === 'handoff')) return;
    if (d.kind === 'finish') return this.finish(local, 'done', d.reason);
    if (d.kind === 'stay') return this.enqueue(local);
    this.sendOut(local, d.handoff, batch, d.at);
  }

  /** Appends a committed token and tells the entry, with the text it shows; false when that ended the request (a stop string, a cancel). */
  private commit(local: LocalRequest, sig: TokenSignals, atHandoff: boolean): boolean {
    local.tokens.push(sig.token);
    const refused = local.grammar && acceptCommitted(local, this.name);
    if (refused) {
      this.finish(local, 'failed', 'error', refused);
      return false;
    }
    const { text } = local;
    const shown = text ? this.host.output!.push(text, local.spec, sig.token) : '';
    this.events.push({
      type: 'commit',
      requestId: local.id,
      index: local.generated - 1,
      token: sig.token,
      model: local.model,
      signals: local.spec.detail ? sig : undefined,
      atHandoff,
      text: shown,
    });
    if (text && text.stopAt >= 0) {
      this.finish(local, 'done', 'stop');
      return false;
    }
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
    this.host.trace?.emit({
      type: 'handoff',
      t: this.host.clock.now(),
      requestId: local.id,
      from: this.name,
      to,
      batchId: batch.id,
      tokens: handoff.tokens.length,
      kept: handoff.keep,
      at,
    });
    const { retain } = this.host.policy;
    if (retain) {
      this.move(local, LOCAL_EVENTS.HANDOFF);
      this.queues.left(local);
      // Its cache just became evictable: a request waiting for memory here may now fit.
      if (this.queues.waitingAdmission > 0) this.admitWaiting();
    } else {
      this.move(local, LOCAL_EVENTS.FINISH);
      this.forget(local);
    }
    const { counters } = local;
    this.events.push({ type: 'moved', requestId: spec.id, to, hops: counters.handoffs });
    // Standard serving: the peer may hold nothing of this request any more, so the whole context goes too.
    const { text } = local;
    this.sent.push({ to, arrival: retain ? { spec, handoff, known, counters, text } : { spec, handoff, known, counters, context: local.tokens, text } });
  }

  /** What this engine produced since the last call, for the host to ship; the engine starts afresh. */
  take(): EngineOutputs {
    const out = { events: this.events, sent: this.sent };
    if (this.events.length > 0) this.events = [];
    if (this.sent.length > 0) this.sent = [];
    return out;
  }

  /** A request arrives, from the entry (first placement) or from a peer: receive it and queue it here. */
  arrive(a: Arrival): void {
    const { spec, handoff } = a;
    if (spec.constraint && heldForGrammar(this.host, a, this.info, this.locals.get(spec.id))) return;
    const got = receiveRow(spec.algorithm, handoff);
    let local = this.locals.get(spec.id);
    const refused = refuseArrival(this.name, a, 'fail' in got ? got.fail : undefined, this.host.output !== undefined, local !== undefined);
    if (refused || 'fail' in got) return void this.events.push({ type: 'finish', requestId: spec.id, status: 'failed', reason: 'error', error: refused! });
    const meta = got.meta;
    const known = a.known;
    known[handoff.to] = handoff.anchor + handoff.tokens.length;
    if (local) {
      // Back from a peer: append the unseen suffix and resume, with no re-admission while the cache is held.
      local.tokens.push(...handoff.tokens);
      local.known = known;
      local.meta = meta;
      local.counters = a.counters;
      local.text = a.text;
      local.stepsHere = 0;
      if (local.hasCache) {
        this.move(local, LOCAL_EVENTS.RETURN);
        return this.enqueue(local);
      }
      this.move(local, LOCAL_EVENTS.REQUEUE);
    } else {
      const grammar = spec.constraint && newGrammarState(this.host, spec, this.info);
      if (grammar instanceof Error) return void this.events.push({ type: 'finish', requestId: spec.id, status: 'failed', reason: 'error', error: grammar });
      local = new LocalRequest(spec, handoff.to, (a.context ?? handoff.tokens).slice(), known, meta, a.counters);
      local.grammar = grammar;
      local.text = a.text;
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
    this.move(local, LOCAL_EVENTS.ADMIT);
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

  /** The request ended here: the entry hears it, and the cache goes now (the entry's release would come straight back). */
  private finish(local: LocalRequest, status: 'done' | 'failed', reason: 'stop' | 'length' | 'error', error?: Error): void {
    // only the engine decoding it holds its text whole; what was held back goes with the finish
    const text = local.owned && local.text ? this.host.output!.finish(local.text) : undefined;
    this.events.push({
      type: 'finish',
      requestId: local.id,
      status,
      reason,
      error,
      committed: local.generated,
      text,
      ...(local.owned ? { counters: local.counters } : {}),
    });
    if (this.locals.get(local.id) === local) this.release(local.spec, status);
  }

  /** A row came back for a request that ended while its step ran: its cache can go now. */
  private endedMeanwhile(local: LocalRequest): boolean {
    if (!local.ended) return false;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
    return true;
  }

  private forget(local: LocalRequest): void {
    local.grammar?.dispose();
    local.grammar = undefined;
    this.queues.dequeue(local);
    if (this.locals.get(local.id) === local) this.locals.delete(local.id);
    if (this.isStepping(local)) return;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
  }

  private enqueue(local: LocalRequest): void {
    this.queues.enqueue(local);
  }

  admitWaiting(): void {
    for (const local of this.queues.admitWaiting()) {
      this.move(local, LOCAL_EVENTS.ADMIT);
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

  private settle(batch: Batch): void {
    this.stats.busyMs += this.host.clock.now() - batch.start;
    this.stats.runnerWallMs += batch.wallMs;
  }

  private returned(batch: Batch): EngineOutputs {
    const end = this.host.clock.now();
    // counters, not trace events, give the benches' and /metrics' split: they cost nothing without a reader
    this.stats.batchMs += end - batch.start;
    this.stats.modelMs += batch.modelMs;
    this.host.trace?.emit(batchEvent(batch, this.name, end));
    this.inFlight = null;
    return this.take();
  }

  /** The runner could not run the batch: its requests fail. Returns what that produced. */
  fail(batch: Batch, error: Error): EngineOutputs {
    this.settle(batch);
    const { locals } = batch;
    for (let i = 0; i < locals.length; i++) {
      batch.applied = i + 1;
      if (!this.endedMeanwhile(locals[i]))
        this.finish(locals[i], 'failed', 'error', new TokenRouterError('runner_error', `${this.name} step failed: ${error.message}`));
    }
    return this.returned(batch);
  }
}
