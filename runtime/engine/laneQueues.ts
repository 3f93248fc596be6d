// One engine's queues and KV pool: ready FIFO, admission queue, pending-return caches; planners decide, this applies.
import { TokenRouterError } from '../errors.ts';
import { planAdmission } from '../scheduler/planAdmission.ts';
import type { ReadyRow } from '../scheduler/planBatch.ts';
import { CachePool } from './cachePool.ts';
import { LocalRequest } from './localRequest.ts';

export class LaneQueues {
  readonly pool: CachePool;
  /** FIFO; may hold stale slots (a local no longer inReady, or enqueued again later): each step's view skips them. */
  private ready: LocalRequest[] = [];
  readyCount = 0;
  /** Numbers each step's view, so a local sitting in the FIFO twice is read once. */
  private viewSeq = 0;
  /** Locals waiting for a cache reservation, FIFO. */
  private admissionQueue: LocalRequest[] = [];
  /** Pending-return locals holding a cache, oldest first: eviction candidates under memory pressure. */
  private readonly pendingReturn = new Set<LocalRequest>();
  constructor(
    kvCapacityTokens: number,
    kvBytesPerToken: number,
    private readonly stats: { admissions: number; evictions: number },
    /** Frees a cache in the runner. */
    private readonly release: (cacheId: number) => void,
  ) {
    this.pool = new CachePool(kvCapacityTokens, kvBytesPerToken);
  }

  get waitingAdmission(): number {
    return this.admissionQueue.length;
  }

  get pendingReturnCount(): number {
    return this.pendingReturn.size;
  }

  enqueue(local: LocalRequest): void {
    local.inReady = true;
    this.ready.push(local);
    this.readyCount++;
  }

  /** Takes a local off every queue (it ended, or a lookahead result served it). */
  dequeue(local: LocalRequest): void {
    this.unready(local);
    const i = this.admissionQueue.indexOf(local);
    if (i >= 0) this.admissionQueue.splice(i, 1);
    this.pendingReturn.delete(local);
  }

  /** Its FIFO slot goes stale; the next view skips it. */
  unready(local: LocalRequest): void {
    if (!local.inReady) return;
    local.inReady = false;
    this.readyCount--;
  }

  markPendingReturn(local: LocalRequest): void {
    this.pendingReturn.add(local);
  }

  resumed(local: LocalRequest): void {
    this.pendingReturn.delete(local);
  }

  /**
   * The ready requests in FIFO order, as the planner reads them: enough of them to fill a batch of
   * `limit` (rows a running batch still serves do not count toward it). Stale slots go.
   */
  readyView(awaitingAhead: ReadonlySet<LocalRequest> | null, limit: number): { rows: ReadyRow[]; locals: LocalRequest[] } {
    const locals: LocalRequest[] = [];
    const rows: ReadyRow[] = [];
    const stamp = ++this.viewSeq;
    let i = 0;
    let taken = 0;
    for (; i < this.ready.length && taken < limit; i++) {
      const local = this.ready[i];
      // a local enqueued again after its slot went stale sits here twice: the first slot counts
      if (!local.inReady || local.viewStamp === stamp) continue;
      local.viewStamp = stamp;
      const { spec, tokens } = local;
      const generated = tokens.length - spec.promptLength;
      const waiting = awaitingAhead?.has(local) ?? false;
      if (!waiting) taken++;
      locals.push(local);
      rows.push({
        fed: local.fed,
        unfed: tokens.length - local.fed,
        room: spec.maxLength - tokens.length - 1,
        belowMin: generated < spec.minTokens ? spec.minTokens - generated - 1 : Infinity,
        awaitingAhead: waiting,
      });
    }
    this.ready = i === this.ready.length ? locals : locals.concat(this.ready.slice(i));
    return { rows, locals };
  }

  /**
   * Queues `local` for a cache reservation of its whole context and admits what fits; true when
   * it got one at once. A request larger than the whole pool is refused.
   */
  admit(local: LocalRequest): boolean {
    const need = local.spec.maxLength;
    if (need > this.pool.capacityTokens) {
      throw new TokenRouterError('too_large', `request ${local.id} needs ${need} KV tokens (prompt + max_tokens), more than the whole KV pool holds (${this.pool.capacityTokens})`, 'max_tokens');
    }
    this.admissionQueue.push(local);
    return this.admitWaiting().includes(local);
  }

  /** Admits the waiting locals that now fit (planAdmission decides), evicting pending-return caches for them. */
  admitWaiting(): LocalRequest[] {
    if (this.admissionQueue.length === 0) return [];
    const victims = [...this.pendingReturn];
    const plan = planAdmission({
      capacity: this.pool.capacityTokens,
      reserved: this.pool.reservedTokenCount,
      waiting: this.admissionQueue.map((l) => l.spec.maxLength),
      evictable: victims.map((l) => l.reserved),
    });
    for (const victim of victims.slice(0, plan.evict)) {
      this.dropCache(victim);
      this.pendingReturn.delete(victim);
      this.stats.evictions++;
    }
    const admitted = this.admissionQueue.splice(0, plan.admit);
    for (const local of admitted) {
      this.pool.tryReserve(local.spec.maxLength);
      local.reserved = local.spec.maxLength;
      local.cacheId = LocalRequest.newCacheId();
      local.fed = 0;
      this.stats.admissions++;
      local.counters.admissions[local.model]++;
    }
    return admitted;
  }

  /** A step appended `n` tokens to the local's cache. */
  fed(local: LocalRequest, n: number): void {
    local.fed += n;
    this.pool.cached(n);
    local.counters.tokensFed[local.model] += n;
  }

  /** Frees a local's cache and reservation. Never while it is in a batch. */
  dropCache(local: LocalRequest): void {
    if (!local.hasCache) return;
    this.release(local.cacheId);
    this.pool.cached(-local.fed);
    this.pool.unreserve(local.reserved);
    local.cacheId = -1;
    local.reserved = 0;
    local.fed = 0;
  }

  /** New pool size; returns the waiting requests that can never fit now (taken off the queue). */
  resize(tokens: number): LocalRequest[] {
    this.pool.resize(tokens);
    const unfit = this.admissionQueue.filter((l) => l.spec.maxLength > tokens);
    this.admissionQueue = this.admissionQueue.filter((l) => l.spec.maxLength <= tokens);
    return unfit;
  }
}
