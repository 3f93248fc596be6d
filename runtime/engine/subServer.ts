// One model's sub-server: ready queue, admission against its KV pool, batch launch and completion.
import { createActor, type Actor } from 'xstate';
import type { TokenSignals } from '../../shared/algorithm.ts';
import { subServerMachine, type SubServerHost } from '../actors/subServerMachine.ts';
import type { Clock } from '../clock/clock.ts';
import type { LaneView, LaunchPolicy } from '../scheduler/launchPolicy.ts';
import { rowPhase, type ModelRunner, type StepOutput, type StepPhase, type StepRow } from '../runner/modelRunner.ts';
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
/** Lookahead step s is asked for only while a row is more likely than this to still be here: stay^s ≥ it. */
const AHEAD_MIN_CHANCE = 0.5;

export class SubServer implements SubServerHost, LaneView {
  readonly name: string;
  /** Replaced when a crashed runner is restarted. */
  runner: ModelRunner;
  maxBatch: number;
  threshold: number;
  readonly pool: CachePool;
  readonly actor: Actor<typeof subServerMachine>;
  readonly stats = new SubServerStats();
  /** FIFO; a consumed slot is nulled so finished requests are not kept reachable until compaction. */
  private ready: (LocalRequest | null)[] = [];
  private readyHead = 0;
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
   * (oldest first) if that makes room; otherwise it waits in the admission queue.
   */
  admit(local: LocalRequest): boolean {
    const need = local.req.maxLength;
    if (need > this.pool.capacityTokens) {
      throw new RangeError(`request ${local.req.id} needs ${need} KV tokens on ${this.name}, pool holds ${this.pool.capacityTokens}`);
    }
    if (!this.pool.tryReserve(need)) {
      if (this.admissionQueue.length > 0 || !this.evictFor(need, local)) {
        this.admissionQueue.push(local);
        return false;
      }
      this.pool.tryReserve(need);
    }
    local.reserved = need;
    local.cacheId = LocalRequest.newCacheId();
    local.fed = 0;
    this.stats.admissions++;
    local.req.admissions[local.model]++;
    return true;
  }

  private evictFor(need: number, except: LocalRequest): boolean {
    for (const victim of this.pendingReturn) {
      if (this.pool.capacityTokens - this.pool.reservedTokenCount >= need) break;
      if (victim === except) continue;
      this.dropCache(victim);
      this.pendingReturn.delete(victim);
      this.stats.evictions++;
    }
    return this.pool.capacityTokens - this.pool.reservedTokenCount >= need;
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

  /** Admits waiting locals that now fit; returns those admitted so the cluster can mark them running. */
  /** New pool size; returns the waiting requests that can never fit now (taken off the queue). */
  resize(tokens: number): LocalRequest[] {
    this.pool.resize(tokens);
    const unfit = this.admissionQueue.filter((l) => l.req.maxLength > tokens);
    this.admissionQueue = this.admissionQueue.filter((l) => l.req.maxLength <= tokens);
    return unfit;
  }

  admitWaiting(): LocalRequest[] {
    const admitted: LocalRequest[] = [];
    while (this.admissionQueue.length > 0) {
      const local = this.admissionQueue[0];
      const need = local.req.maxLength;
      if (!this.pool.tryReserve(need) && !(this.evictFor(need, local) && this.pool.tryReserve(need))) break;
      this.admissionQueue.shift();
      local.reserved = need;
      local.cacheId = LocalRequest.newCacheId();
      local.fed = 0;
      this.stats.admissions++;
      local.req.admissions[local.model]++;
      admitted.push(local);
    }
    return admitted;
  }

  // --- execution ---
  launch(): void {
    const clock = this.owner.clock;
    const locals: LocalRequest[] = [];
    const rows: StepRow[] = [];
    let phase: StepPhase = 'decode';
    let tokens = 0;
    let ahead = 0;
    const aheadCap = this.aheadCap();
    const ready = this.ready;
    // A request a running batch still serves by lookahead stays for it (only a pipelined lane has one running).
    const waiting = this.awaitingAhead();
    const deferred: LocalRequest[] = [];
    while (locals.length < this.maxBatch && this.readyHead < ready.length) {
      const local = ready[this.readyHead];
      ready[this.readyHead++] = null;
      if (!local || !local.inReady) continue;
      if (waiting?.has(local)) {
        deferred.push(local);
        continue;
      }
      local.inReady = false;
      local.inBatch = true;
      this.readyCount--;
      const req = local.req;
      const row: StepRow = {
        cacheId: local.cacheId,
        requestId: req.id,
        tokens: req.tokens.slice(local.fed),
        position: local.fed,
        sampling: req.stepSampling,
        wants: local.wants,
        ahead: this.aheadFor(local, aheadCap),
      };
      if (row.ahead! > ahead) ahead = row.ahead!;
      const p = rowPhase(row);
      if (p === 'prefill' || (p === 'extend' && phase === 'decode')) phase = p;
      tokens += row.tokens.length;
      locals.push(local);
      rows.push(row);
    }
    for (const local of deferred) ready.push(local);
    if (this.readyHead > 1024 && this.readyHead * 2 > ready.length) {
      this.ready = ready.slice(this.readyHead);
      this.readyHead = 0;
    }
    const batch: Batch = { id: this.owner.nextBatchId(), lane: this.index, locals, rows, start: clock.now(), phase, tokens, ahead, steps: 1, aheadRows: 0, yielded: false, wall0: 0, live: [], last: [], streaming: false };
    this.inFlight.push(batch);
    this.owner.policy.launched(this);
    let out: StepOutput | Promise<StepOutput>;
    const wall0 = performance.now();
    batch.wall0 = wall0;
    try {
      if (this.down) throw new Error(`sub-server ${this.name} is down`);
      out = this.runner.step(rows);
    } catch (e) {
      clock.setTimeout(() => this.fail(batch, e as Error, performance.now() - wall0), 0);
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (o) => this.complete(batch, o, performance.now() - wall0),
        (e: Error) => this.fail(batch, e, performance.now() - wall0),
      );
    } else {
      const wall = performance.now() - wall0;
      const o = out;
      clock.setTimeout(() => this.complete(batch, o, wall), o.durationMs ?? 0);
    }
  }

  /** Lookahead steps worth asking of a row on this lane now: none unless the lane's rows mostly stay. */
  private aheadCap(): number {
    const cap = Math.min(this.lookahead, this.runner.maxAhead ?? 0);
    if (cap <= 0 || this.stayRate <= AHEAD_MIN_CHANCE) return 0;
    if (this.stayRate >= 1) return cap;
    return Math.min(cap, Math.floor(Math.log(AHEAD_MIN_CHANCE) / Math.log(this.stayRate)));
  }

  /** Within the request's limits: every lookahead step commits one more token, and EOS suppression must not change midway. */
  private aheadFor(local: LocalRequest, cap: number): number {
    if (cap === 0) return 0;
    const req = local.req;
    let n = Math.min(cap, req.maxLength - req.tokens.length - 1);
    if (req.generated < req.minTokens) n = Math.min(n, req.minTokens - req.generated - 1);
    return Math.max(0, n);
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
