// One model's sub-server: ready queue, admission against its KV pool, batch launch and completion.
import { createActor, type Actor } from 'xstate';
import type { TokenSignals } from '../../shared/algorithm.ts';
import { subServerMachine, type SubServerHost } from '../actors/subServerMachine.ts';
import type { Clock } from '../clock/clock.ts';
import type { LaneView, LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { planAdmission } from '../scheduler/planAdmission.ts';
import { aheadCap, planBatch, type BatchPlan, type ReadyRow } from '../scheduler/planBatch.ts';
import type { ModelRunner, StepOutput, StepPhase, StepRow } from '../runner/modelRunner.ts';
import { CachePool } from './cachePool.ts';
import { LocalRequest } from './localRequest.ts';

export interface SubServerOptions {
  name: string;
  runner: ModelRunner;
  maxBatch: number;
  /** Delayed-batching threshold T: launch when this many requests are ready (async-delayed). */
  threshold: number;
  /** KV capacity in tokens; Infinity = unbounded. */
  kvCapacityTokens: number;
  /** Most lookahead steps a row may ask of a runner that has them (0: none). */
  lookahead?: number;
}

export interface Batch {
  id: number;
  /** Index of the lane (sub-server) that ran it. */
  lane: number;
  locals: LocalRequest[];
  rows: StepRow[];
  start: number;
  phase: StepPhase;
  tokens: number;
  /** Most lookahead steps any row asked for. */
  ahead: number;
  /** Forward passes the runner made: 1 + the lookahead steps it returned. */
  steps: number;
  /** Row results taken from lookahead. */
  aheadRows: number;
  /** The runner was told to stop its lookahead early. */
  yielded: boolean;
  /** performance.now() at launch. */
  wall0: number;
  /** Lookahead in use: rows (indices) that took every lookahead result so far, and their last result. */
  live: number[];
  last: TokenSignals[];
  /** Its lookahead results are still arriving (the batch runs until they end). */
  streaming: boolean;
}

/** What a sub-server needs from the cluster around it. */
export interface SubServerOwner {
  readonly clock: Clock;
  readonly policy: LaunchPolicy;
  maxWaitMs: number;
  nextBatchId(): number;
  /** Routes one row's result: commit, hand off, finish. */
  onRowResult(local: LocalRequest, signals: TokenSignals, batch: Batch): void;
  /** The runner lost this row's cache during the step (StepOutput.lost): its request fails. */
  onRowLost(local: LocalRequest, error: Error): void;
  onBatchFailed(batch: Batch, error: Error): void;
  /** Results were routed while the batch runs on (streamed lookahead): send the wave's work out. */
  onWaveEnd(): void;
  /** After BATCH_DONE: close the wave (wake lanes that got work, open sync rounds). */
  onBatchReturned(batch: Batch, out: StepOutput | null, wallMs: number): void;
}

export class SubServerStats {
  batches = 0;
  rows = 0;
  tokensFed = 0;
  admissions = 0;
  evictions = 0;
  busyMs = 0;
  /** Wall ms spent inside runner.step (the model itself for real runners). */
  runnerWallMs = 0;
  /** Row results taken from lookahead instead of a new batch. */
  aheadRows = 0;
  /** Times new work cut a running batch's lookahead short. */
  aheadYields = 0;
}

/** Weight of one row's outcome in the lane's stay rate (an exponential moving average). */
const STAY_ALPHA = 1 / 16;

export class SubServer implements SubServerHost, LaneView {
  readonly name: string;
  /** Replaced when a crashed runner is restarted. */
  runner: ModelRunner;
  maxBatch: number;
  threshold: number;
  readonly pool: CachePool;
  readonly actor: Actor<typeof subServerMachine>;
  readonly stats = new SubServerStats();
  /** FIFO; may hold stale slots (a local no longer inReady, or enqueued again later): each step's view skips them. */
  private ready: LocalRequest[] = [];
  readyCount = 0;
  /** Locals waiting for a cache reservation, FIFO. */
  private admissionQueue: LocalRequest[] = [];
  /** Pending-return locals holding a cache, oldest first: eviction candidates under memory pressure. */
  private readonly pendingReturn = new Set<LocalRequest>();
  /** Batches launched and not yet returned, oldest first (more than one only for a pipelined runner). */
  readonly inFlight: Batch[] = [];
  /** Set when ready work arrived during a wave; the cluster flushes one WORK event per lane. */
  dirty = false;
  /** Down: steps fail fast until the runner is replaced. */
  down = false;
  /** Cap on lookahead steps per row (0: none; sync modes keep it 0: their barrier is per step). */
  lookahead: number;
  /** How often a row that stepped here stayed for another step, recently (drives lookahead). */
  stayRate = 0.5;

  constructor(
    readonly index: number,
    opts: SubServerOptions,
    private readonly owner: SubServerOwner,
  ) {
    this.name = opts.name;
    this.runner = opts.runner;
    this.maxBatch = opts.maxBatch;
    this.threshold = opts.threshold;
    this.lookahead = opts.lookahead ?? 0;
    this.pool = new CachePool(opts.kvCapacityTokens, opts.runner.info.kvBytesPerToken);
    this.actor = createActor(subServerMachine, { input: { host: this }, clock: owner.clock });
    this.actor.start();
  }

  get executing(): boolean {
    return this.inFlight.length > 0;
  }

  /** How many batches may be in flight (a sync barrier still grants one launch per round). */
  get pipelineDepth(): number {
    return Math.max(1, this.runner.pipelineDepth ?? 1);
  }

  /** Another batch may start now, beside those in flight. */
  get canPipeline(): boolean {
    return this.inFlight.length > 0 && this.inFlight.length < this.pipelineDepth;
  }

  /** Requests in batches in flight. */
  get inFlightRows(): number {
    let n = 0;
    for (const b of this.inFlight) n += b.locals.length;
    return n;
  }

  get waitingAdmission(): number {
    return this.admissionQueue.length;
  }

  get pendingReturnCount(): number {
    return this.pendingReturn.size;
  }

  // --- SubServerHost: the actor's guards and actions ---
  hasWork(): boolean {
    return this.readyCount > 0;
  }
  mayLaunch(): boolean {
    return this.inFlight.length < this.pipelineDepth && this.owner.policy.mayLaunch(this);
  }
  mayLaunchAtDeadline(): boolean {
    return this.inFlight.length < this.pipelineDepth && this.owner.policy.mayLaunchAtDeadline(this);
  }
  stillExecuting(): boolean {
    return this.inFlight.length > 0;
  }
  maxWaitMs(): number {
    return this.owner.maxWaitMs;
  }

  // --- queues ---
  enqueue(local: LocalRequest): void {
    local.inReady = true;
    local.readySince = this.owner.clock.now();
    this.ready.push(local);
    this.readyCount++;
    this.dirty = true;
  }

  dequeue(local: LocalRequest): void {
    if (local.inReady) {
      local.inReady = false;
      this.readyCount--;
    }
    const i = this.admissionQueue.indexOf(local);
    if (i >= 0) this.admissionQueue.splice(i, 1);
    this.pendingReturn.delete(local);
  }

  markPendingReturn(local: LocalRequest): void {
    this.pendingReturn.add(local);
  }

  resumed(local: LocalRequest): void {
    this.pendingReturn.delete(local);
  }

  /**
   * Gives `local` a cache reservation for its whole context, evicting pending-return caches
   * (oldest first) if that makes room; otherwise it waits, FIFO, in the admission queue.
   */
  admit(local: LocalRequest): boolean {
    const need = local.req.maxLength;
    if (need > this.pool.capacityTokens) {
      throw new RangeError(`request ${local.req.id} needs ${need} KV tokens on ${this.name}, pool holds ${this.pool.capacityTokens}`);
    }
    this.admissionQueue.push(local);
    const admitted = this.admitWaiting();
    return admitted.length > 0 && admitted[admitted.length - 1] === local;
  }

  /** Frees a local's cache and reservation. Never while it is in a batch. */
  dropCache(local: LocalRequest): void {
    if (!local.hasCache) return;
    this.runner.release(local.cacheId);
    this.pool.cached(-local.fed);
    this.pool.unreserve(local.reserved);
    local.cacheId = -1;
    local.reserved = 0;
    local.fed = 0;
  }

  /** New pool size; returns the waiting requests that can never fit now (taken off the queue). */
  resize(tokens: number): LocalRequest[] {
    this.pool.resize(tokens);
    const unfit = this.admissionQueue.filter((l) => l.req.maxLength > tokens);
    this.admissionQueue = this.admissionQueue.filter((l) => l.req.maxLength <= tokens);
    return unfit;
  }

  /** Admits the waiting locals that now fit (planAdmission decides); returns them so the cluster can mark them running. */
  admitWaiting(): LocalRequest[] {
    if (this.admissionQueue.length === 0) return [];
    const victims = [...this.pendingReturn];
    const plan = planAdmission({
      capacity: this.pool.capacityTokens,
      reserved: this.pool.reservedTokenCount,
      waiting: this.admissionQueue.map((l) => l.req.maxLength),
      evictable: victims.map((l) => l.reserved),
    });
    for (const victim of victims.slice(0, plan.evict)) {
      this.dropCache(victim);
      this.pendingReturn.delete(victim);
      this.stats.evictions++;
    }
    const admitted = this.admissionQueue.splice(0, plan.admit);
    for (const local of admitted) {
      this.pool.tryReserve(local.req.maxLength);
      local.reserved = local.req.maxLength;
      local.cacheId = LocalRequest.newCacheId();
      local.fed = 0;
      this.stats.admissions++;
      local.req.admissions[local.model]++;
    }
    return admitted;
  }

  // --- the step: plan → execute → apply ---

  /** One batched step: the planner picks the rows, the runner runs them, `complete` applies the results. */
  step(): void {
    const ready = this.takeReadyView();
    const plan = planBatch(ready.rows, { maxBatch: this.maxBatch, aheadCap: aheadCap(this.lookahead, this.runner.maxAhead ?? 0, this.stayRate) });
    const batch = this.start(plan, ready.locals);
    let out: StepOutput | Promise<StepOutput>;
    try {
      if (this.down) throw new Error(`sub-server ${this.name} is down`);
      out = this.runner.step(batch.rows);
    } catch (e) {
      this.owner.clock.setTimeout(() => this.fail(batch, e as Error, performance.now() - batch.wall0), 0);
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (o) => this.complete(batch, o, performance.now() - batch.wall0),
        (e: Error) => this.fail(batch, e, performance.now() - batch.wall0),
      );
    } else {
      const wall = performance.now() - batch.wall0;
      const o = out;
      this.owner.clock.setTimeout(() => this.complete(batch, o, wall), o.durationMs ?? 0);
    }
  }

  /** The actor's `launch`. */
  launch(): void {
    this.step();
  }

  /** The ready requests in FIFO order, as the planner reads them (stale FIFO slots compacted away). */
  private takeReadyView(): { rows: ReadyRow[]; locals: LocalRequest[] } {
    const waiting = this.awaitingAhead();
    const locals: LocalRequest[] = [];
    const rows: ReadyRow[] = [];
    const seen = new Set<LocalRequest>();
    for (const local of this.ready) {
      if (!local.inReady || seen.has(local)) continue;
      seen.add(local);
      const req = local.req;
      locals.push(local);
      rows.push({
        fed: local.fed,
        unfed: req.tokens.length - local.fed,
        room: req.maxLength - req.tokens.length - 1,
        belowMin: req.generated < req.minTokens ? req.minTokens - req.generated - 1 : Infinity,
        awaitingAhead: waiting?.has(local) ?? false,
      });
    }
    return { rows, locals };
  }

  /** Takes the planned rows off the ready queue and records the batch as in flight. */
  private start(plan: BatchPlan, candidates: readonly LocalRequest[]): Batch {
    const locals: LocalRequest[] = [];
    const rows: StepRow[] = [];
    let ahead = 0;
    plan.rows.forEach((ri, k) => {
      const local = candidates[ri];
      local.inReady = false;
      local.inBatch = true;
      this.readyCount--;
      const req = local.req;
      rows.push({ cacheId: local.cacheId, requestId: req.id, tokens: req.tokens.slice(local.fed), position: local.fed, sampling: req.stepSampling, wants: local.wants, ahead: plan.ahead[k] });
      if (plan.ahead[k] > ahead) ahead = plan.ahead[k];
      locals.push(local);
    });
    // The rest keep their FIFO order; consumed and stale slots go.
    this.ready = candidates.filter((l) => l.inReady);
    const batch: Batch = { id: this.owner.nextBatchId(), lane: this.index, locals, rows, start: this.owner.clock.now(), phase: plan.phase, tokens: plan.tokens, ahead, steps: 1, aheadRows: 0, yielded: false, wall0: performance.now(), live: [], last: [], streaming: false };
    this.inFlight.push(batch);
    this.owner.policy.launched(this);
    return batch;
  }

  private awaitingAhead(): Set<LocalRequest> | null {
    let set: Set<LocalRequest> | null = null;
    for (const b of this.inFlight) if (b.streaming) for (const i of b.live) if (b.locals[i].inReady) (set ??= new Set()).add(b.locals[i]);
    return set;
  }

  /** Ready requests other than those waiting for a running batch's streamed lookahead. */
  get newWork(): number {
    let waiting = 0;
    for (const b of this.inFlight) if (b.streaming) for (const i of b.live) if (b.locals[i].inReady) waiting++;
    return this.readyCount - waiting;
  }

  /** New work arrived while a batch runs: a runner still looking ahead should hand back what it has. */
  yieldAhead(): void {
    for (const b of this.inFlight) {
      if (b.ahead > 0 && !b.yielded) {
        b.yielded = true;
        this.stats.aheadYields++;
        this.runner.yieldAhead?.();
      }
    }
  }

  private noteStay(stayed: boolean): void {
    this.stayRate += STAY_ALPHA * ((stayed ? 1 : 0) - this.stayRate);
  }

  private settle(batch: Batch): void {
    const i = this.inFlight.indexOf(batch);
    if (i >= 0) this.inFlight.splice(i, 1);
  }

  private complete(batch: Batch, out: StepOutput, wallMs: number): void {
    const stream = out.aheadStream;
    const st = this.stats;
    st.batches++;
    st.rows += batch.rows.length;
    st.tokensFed += batch.tokens;
    if (!stream) {
      this.settle(batch);
      st.busyMs += this.owner.clock.now() - batch.start;
      st.runnerWallMs += wallMs;
    }
    const { locals, rows } = batch;
    const lost = out.lost ? new Set(out.lost.rows) : null;
    for (let i = 0; i < locals.length; i++) {
      const local = locals[i];
      local.inBatch = false;
      if (lost?.has(i)) {
        this.owner.onRowLost(local, out.lost!.error);
        continue;
      }
      const fed = rows[i].tokens.length;
      local.fed += fed;
      this.pool.cached(fed);
      local.req.tokensFed[local.model] += fed;
      this.owner.onRowResult(local, out.rows[i], batch);
      if (this.lookahead > 0) this.noteStay(local.inReady);
    }
    if (out.ahead || stream) {
      batch.last = out.rows.slice();
      for (let i = 0; i < locals.length; i++) if (locals[i].inReady && (rows[i].ahead ?? 0) > 0) batch.live.push(i);
    }
    if (out.ahead) {
      const parts = Math.max(0, ...out.ahead.map((a) => a?.length ?? 0));
      for (let s = 0; s < parts; s++) this.aheadPart(batch, out.ahead.map((a) => a?.[s]));
    }
    if (!stream) return this.finish(batch, out, wallMs);
    // The model runs on: route this wave now, then each lookahead step as it arrives.
    batch.streaming = true;
    this.owner.onWaveEnd();
    stream.listen(
      (part) => {
        this.aheadPart(batch, part.rows);
        this.owner.onWaveEnd();
      },
      // An error ending the stream is the runner dying: its onFailure handling fails the requests it
      // held; the results streamed before it stand, as any step that finished does.
      () => {
        batch.streaming = false;
        this.settle(batch);
        st.busyMs += this.owner.clock.now() - batch.start;
        const wall = performance.now() - batch.wall0;
        st.runnerWallMs += wall;
        this.finish(batch, out, wall);
      },
    );
  }

  private finish(batch: Batch, out: StepOutput, wallMs: number): void {
    this.actor.send({ type: 'BATCH_DONE' });
    this.owner.onBatchReturned(batch, out, wallMs);
  }

  /**
   * One lookahead step's results, for the rows that stayed: each such row is taken back out of the
   * ready queue and handled exactly as if a batch had just run it. A row that left, ended or was
   * cancelled uses no later result of this batch; the runner rolls its cache back when it next
   * steps there.
   */
  private aheadPart(batch: Batch, part: readonly (TokenSignals | undefined)[]): void {
    const { locals, rows } = batch;
    const s = batch.steps++ - 1;
    const next: number[] = [];
    for (const i of batch.live) {
      const local = locals[i];
      const sig = part[i];
      const req = local.req;
      // It must have stayed: ready here, same cache, every earlier result used, and its one unfed
      // token is the one the runner fed.
      if (!sig || !local.inReady || req.finished || local.cacheId !== rows[i].cacheId) continue;
      if (local.fed !== rows[i].position + rows[i].tokens.length + s) continue;
      if (req.tokens.length !== local.fed + 1 || req.tokens[local.fed] !== batch.last[i].token) continue;
      // its slot in the ready FIFO goes stale: launch skips a local that is no longer inReady
      local.inReady = false;
      this.readyCount--;
      local.fed += 1;
      this.pool.cached(1);
      req.tokensFed[local.model] += 1;
      this.stats.tokensFed++;
      this.stats.rows++;
      this.stats.aheadRows++;
      batch.aheadRows++;
      batch.tokens++;
      batch.last[i] = sig;
      this.owner.onRowResult(local, sig, batch);
      this.noteStay(local.inReady);
      next.push(i);
    }
    batch.live = next;
  }

  private fail(batch: Batch, error: Error, wallMs: number): void {
    this.settle(batch);
    for (const local of batch.locals) local.inBatch = false;
    this.owner.onBatchFailed(batch, error);
    this.actor.send({ type: 'BATCH_DONE' });
    this.owner.onBatchReturned(batch, null, wallMs);
  }
}
