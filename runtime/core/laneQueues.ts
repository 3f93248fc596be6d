// One engine's queues and KV pool: ready FIFO, admission queue, eviction of pending-return caches, prefix cache; planners decide, this applies.
import { TokenRouterError } from '../errors.ts';
import { planAdmission } from './planAdmission.ts';
import type { ReadyRow } from './planBatch.ts';
import { CachePool } from './cachePool.ts';
import type { LocalRequest } from './localRequest.ts';
import { PrefixCache } from './prefixCache.ts';

/** Entries kept at most when the pool is unbounded (a bounded pool's room bounds them). */
const MAX_PREFIX_ENTRIES = 256;

/** What the queues count in the engine's stats. */
export interface QueueStats {
  admissions: number;
  evictions: number;
  /** Prefix cache, in tokens as vLLM counts them: context tokens looked up, and those found cached. */
  prefixQueries: number;
  prefixHits: number;
  /** Prefix entries dropped to make room. */
  prefixEvictions: number;
}

/** The runner calls the queues make. */
export interface QueueRunner {
  release(cacheId: number): void;
  fork(source: number, target: number, tokens: number): boolean;
}

export class LaneQueues {
  readonly pool: CachePool;
  /**
   * The ready requests, FIFO: a step may take them. The only record of readiness (a local's actor
   * says running; this queue, whether it waits for a step or is in the batch in flight).
   */
  private ready: LocalRequest[] = [];
  /** Locals waiting for a cache reservation, FIFO. */
  private admissionQueue: LocalRequest[] = [];
  /** Numbers handoffs, so pending-return caches are evicted oldest first. */
  private leftSeq = 0;
  /** Caches of requests that let go of them, by token ids (null: prefix caching off). */
  readonly prefix: PrefixCache | null;
  constructor(
    kvCapacityTokens: number,
    kvBytesPerToken: number,
    private readonly stats: QueueStats,
    private readonly runner: QueueRunner,
    prefixCache: boolean,
    /** The engine's requests: which of them wait pending-return is their actors' state, read here. */
    private readonly locals: ReadonlyMap<string, LocalRequest>,
  ) {
    this.pool = new CachePool(kvCapacityTokens, kvBytesPerToken);
    this.prefix = prefixCache ? new PrefixCache((cacheId) => this.runner.release(cacheId)) : null;
    this.pool.prefix = this.prefix;
  }

  get waitingAdmission(): number {
    return this.admissionQueue.length;
  }

  get pendingReturnCount(): number {
    let n = 0;
    for (const l of this.locals.values()) if (l.hasCache && l.status === 'pending-return') n++;
    return n;
  }

  /** Pending-return locals still holding a cache, oldest first: the eviction candidates under memory pressure. */
  private evictable(): LocalRequest[] {
    const out: LocalRequest[] = [];
    for (const l of this.locals.values()) if (l.hasCache && l.status === 'pending-return') out.push(l);
    return out.sort((a, b) => a.leftAt - b.leftAt);
  }

  get readyCount(): number {
    return this.ready.length;
  }

  isReady(local: LocalRequest): boolean {
    return this.ready.includes(local);
  }

  /** Only a running local waits for a step: anything else here is a scheduler bug, refused at once. */
  enqueue(local: LocalRequest): void {
    if (local.status !== 'running') throw new Error(`request ${local.id} is ${local.status}: only a running request waits for a step`);
    this.ready.push(local);
  }

  /** Running locals that fed a chunk of a prompt go back at the head of the FIFO, in their order, to feed the rest first. */
  enqueueFront(locals: readonly LocalRequest[]): void {
    for (const l of locals) if (l.status !== 'running') throw new Error(`request ${l.id} is ${l.status}: only a running request waits for a step`);
    this.ready.unshift(...locals);
  }

  /** Takes a local off every queue (it ended). */
  dequeue(local: LocalRequest): void {
    remove(this.ready, local);
    remove(this.admissionQueue, local);
  }

  /** The local just left for a peer (its actor is pending-return): it is the newest eviction candidate. */
  left(local: LocalRequest): void {
    local.leftAt = ++this.leftSeq;
  }

  /** The ready requests in FIFO order, as the planner reads them: enough of them to fill a batch of `limit`. */
  readyView(limit: number): { rows: ReadyRow[]; locals: LocalRequest[] } {
    const locals = this.ready.length <= limit ? this.ready.slice() : this.ready.slice(0, limit);
    const rows: ReadyRow[] = new Array(locals.length);
    for (let i = 0; i < locals.length; i++) rows[i] = { fed: locals[i].fed, unfed: locals[i].tokens.length - locals[i].fed };
    return { rows, locals };
  }

  /** A batch takes the planned rows of the last view (indices into it) off the queue. */
  take(rows: readonly number[]): void {
    // the planner takes a prefix of the FIFO: one splice
    if (rows.every((r, i) => r === i)) return void this.ready.splice(0, rows.length);
    // decode rows come first in a plan, so its indices are not in order: splice from the back
    const sorted = rows.slice().sort((a, b) => b - a);
    for (const r of sorted) this.ready.splice(r, 1);
  }

  /**
   * Queues `local` for a cache reservation of its whole context and admits what fits; true when
   * it got one at once. A request larger than the whole pool is refused.
   */
  admit(local: LocalRequest): boolean {
    const need = local.spec.maxLength;
    if (need > this.pool.capacityTokens) {
      throw new TokenRouterError(
        'too_large',
        `request ${local.id} needs ${need} KV tokens (prompt + max_tokens), more than the whole KV pool holds (${this.pool.capacityTokens})`,
        'max_tokens',
      );
    }
    this.admissionQueue.push(local);
    return this.admitWaiting().includes(local);
  }

  /**
   * Admits the waiting locals that now fit (planAdmission decides), evicting for them cached
   * prefixes first (least recently used), then pending-return caches. Each starts from its longest
   * cached prefix.
   */
  admitWaiting(): LocalRequest[] {
    const admitted: LocalRequest[] = [];
    while (this.admissionQueue.length > 0) {
      this.evictPrefixesFor(this.admissionQueue[0]);
      const waiting = this.admissionQueue.map((l) => l.spec.maxLength);
      const capacity = this.pool.capacityTokens - this.pool.prefixTokenCount;
      // the pending-return caches are looked up only when what waits cannot all fit without them
      const victims = this.pool.reservedTokenCount + waiting.reduce((s, n) => s + n, 0) <= capacity ? [] : this.evictable();
      const plan = planAdmission({ capacity, reserved: this.pool.reservedTokenCount, waiting, evictable: victims.map((l) => l.reserved) });
      if (plan.admit === 0) break;
      for (const victim of victims.slice(0, plan.evict)) {
        this.dropCache(victim);
        this.stats.evictions++;
      }
      for (const local of this.admissionQueue.splice(0, plan.admit)) {
        local.cache = this.pool.tryOpen(local.spec.maxLength);
        if (!local.cache) throw new Error(`request ${local.id}: admitted by the plan, yet its ${local.spec.maxLength} tokens do not fit the KV pool`);
        this.stats.admissions++;
        local.counters.admissions[local.model]++;
        this.startFromPrefix(local);
        admitted.push(local);
      }
    }
    return admitted;
  }

  /** Drops cached prefixes, oldest use first, until `head` fits beside the reservations, if evicting can make it fit at all. */
  private evictPrefixesFor(head: LocalRequest): void {
    const prefix = this.prefix;
    if (!prefix || prefix.size === 0) return;
    const need = head.spec.maxLength;
    const pool = this.pool;
    let evictable = 0;
    for (const l of this.evictable()) evictable += l.reserved;
    if (pool.reservedTokenCount - evictable + need > pool.capacityTokens) return;
    while (prefix.size > 0 && pool.reservedTokenCount + pool.prefixTokenCount + need > pool.capacityTokens) {
      prefix.evictOne();
      this.stats.prefixEvictions++;
    }
  }

  /** A fresh cache starts as a copy of the longest cached prefix of the context (the step still feeds at least one token). */
  private startFromPrefix(local: LocalRequest): void {
    // penalties count the token ids a cache holds, which a copied prefix does not bring along
    if (!this.prefix || local.spec.sampling.penalties) return;
    this.stats.prefixQueries += local.tokens.length;
    const hit = this.prefix.match(local.tokens, local.tokens.length - 1);
    if (!hit) return;
    if (!this.runner.fork(hit.entry.cacheId, local.cacheId, hit.length)) {
      this.prefix.discard(hit.entry);
      return;
    }
    this.pool.fed(local.cache!, hit.length);
    local.cachedPrefix = hit.length;
    // the prompt's own prefill (nothing generated yet): what usage reports as cached prompt tokens
    if (local.tokens.length === local.spec.promptLength) local.counters.cachedPrompt = Math.max(local.counters.cachedPrompt, hit.length);
    this.stats.prefixHits += hit.length;
  }

  /** A step appended `n` tokens to the local's cache. */
  fed(local: LocalRequest, n: number): void {
    this.pool.fed(local.cache!, n);
    local.counters.tokensFed[local.model] += n;
  }

  /** Frees a local's cache and reservation. Never while it is in a batch. */
  dropCache(local: LocalRequest): void {
    if (!local.hasCache) return;
    this.runner.release(local.cacheId);
    this.clearCache(local);
  }

  /**
   * The local is done with its cache (it ended, or left for good): the prefix cache keeps it, or it
   * is freed (`keep` false: the runner is down, and the cache died with it).
   */
  retire(local: LocalRequest, keep: boolean): void {
    if (!local.hasCache) return;
    if (!this.prefix || !keep) return this.dropCache(local);
    const { cacheId, fed } = local;
    this.clearCache(local);
    this.prefix.insert(cacheId, local.tokens.slice(0, fed));
    // an unbounded pool bounds its prefixes by count
    while (this.pool.capacityTokens === Infinity && this.prefix.size > MAX_PREFIX_ENTRIES) this.prefix.evictOne();
  }

  /** The runner died with every cache: the prefix cache's entries are gone with it. */
  forgetPrefixes(): void {
    this.prefix?.forget();
  }

  private clearCache(local: LocalRequest): void {
    this.pool.close(local.cache!);
    local.cache = null;
    local.cachedPrefix = 0;
  }
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}
