// One engine's queues and KV pool: ready FIFO, admission queue (a pure planner decides), eviction, prefix cache use.
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { ReadyRow, EngineStats } from './batch.ts';
import type { KvCache, LocalRequest } from './localRequest.ts';
import { PrefixCache } from './prefixCache.ts';

/** Entries kept at most when the pool is unbounded (a bounded pool's room bounds them). */
const MAX_PREFIX_ENTRIES = 256;

/** Runner cache ids are unique in the process: a runner outlives the engines that used it (a bench's borrowed thread). */
let nextCacheId = 1;

/** One engine's KV pool: owns the caches its requests hold (id, tokens cached, room reserved); every count is a sum over them. */
export class CachePool {
  readonly open = new Set<KvCache>();

  constructor(
    /** Token capacity of this pool (weights already taken out by the memory plan). */
    readonly capacityTokens: number,
    readonly kvBytesPerToken: number,
    /** What the prefix cache holds (its caches take room as a reservation does). */
    private readonly prefix: { readonly heldTokens: number } | null,
  ) {}

  /** A cache with room for a request's whole context, so a running request never runs out mid-decode; null: it does not fit. */
  tryOpen(reserve: number): KvCache | null {
    if (this.reservedTokenCount + this.prefixTokenCount + reserve > this.capacityTokens) return null;
    const cache: KvCache = { id: nextCacheId++, fed: 0, reserved: reserve };
    this.open.add(cache);
    return cache;
  }

  /** The request let go of the cache: its room is free (the runner's release, or the prefix cache taking it over, is the caller's). */
  close(cache: KvCache): void {
    this.open.delete(cache);
  }

  get reservedTokenCount(): number {
    let n = 0;
    for (const c of this.open) n += c.reserved;
    return n;
  }

  get prefixTokenCount(): number {
    return this.prefix?.heldTokens ?? 0;
  }

  get usedBytes(): number {
    let n = this.prefixTokenCount;
    for (const c of this.open) n += c.fed;
    return n * this.kvBytesPerToken;
  }
}

/** KV tokens each waiting request needs, FIFO; tokens each pending-return cache holds reserved, oldest first. */
export type AdmissionView = { capacity: number; reserved: number; waiting: readonly number[]; evictable: readonly number[] };
/** Admit the first `admit` waiting requests, after evicting the first `evict` pending-return caches. */
export type AdmissionPlan = { admit: number; evict: number };

/** Pure: the head waits for room before anyone behind it; it evicts only as many caches as make it fit, and none when even all would not. */
export function planAdmission(v: AdmissionView): AdmissionPlan {
  let free = v.capacity - v.reserved;
  let admit = 0;
  let evict = 0;
  for (const need of v.waiting) {
    let room = free;
    let upTo = evict;
    while (room < need && upTo < v.evictable.length) room += v.evictable[upTo++];
    if (room < need) break;
    free = room - need;
    evict = upTo;
    admit++;
  }
  return { admit, evict };
}

export class LaneQueues {
  readonly pool: CachePool;
  /** The ready requests, FIFO: the only record of readiness. */
  private ready: LocalRequest[] = [];
  private admissionQueue: LocalRequest[] = [];
  private leftSeq = 0;
  /** Caches of requests that let go of them, by token ids (null: prefix caching off). */
  readonly prefix: PrefixCache | null;

  constructor(
    kvCapacityTokens: number,
    kvBytesPerToken: number,
    private readonly stats: EngineStats,
    /** The engine's runner as it is now (a crashed one is replaced). */
    private readonly runner: Pick<ModelRunner, 'release' | 'fork'>,
    prefixCache: boolean,
    /** The engine's requests: which of them wait pending-return is their actors' state, read here. */
    private readonly locals: ReadonlyMap<string, LocalRequest>,
  ) {
    this.prefix = prefixCache ? new PrefixCache((cacheId) => this.runner.release(cacheId)) : null;
    this.pool = new CachePool(kvCapacityTokens, kvBytesPerToken, this.prefix);
  }

  get waitingAdmission(): number {
    return this.admissionQueue.length;
  }

  /** Pending-return locals still holding a cache, oldest first: the eviction candidates under memory pressure. */
  evictable(): LocalRequest[] {
    const out: LocalRequest[] = [];
    for (const l of this.locals.values()) if (l.cache && l.status === 'pending-return') out.push(l);
    return out.sort((a, b) => a.leftAt - b.leftAt);
  }

  get readyCount(): number {
    return this.ready.length;
  }

  /** Only running locals wait for a step (anything else is a scheduler bug). Chunked prompts go `first`, to feed the rest. */
  enqueue(locals: readonly LocalRequest[], first = false): void {
    for (const l of locals) if (l.status !== 'running') throw new Error(`request ${l.id} is ${l.status}: only a running request waits for a step`);
    if (first) this.ready.unshift(...locals);
    else this.ready.push(...locals);
  }

  dequeue(local: LocalRequest): void {
    this.ready = this.ready.filter((l) => l !== local);
    this.admissionQueue = this.admissionQueue.filter((l) => l !== local);
  }

  left(local: LocalRequest): void {
    local.leftAt = ++this.leftSeq;
  }

  /** The ready requests in FIFO order, as the planner reads them: enough of them to fill a batch of `limit`. */
  readyView(limit: number): { rows: ReadyRow[]; locals: LocalRequest[] } {
    const locals = this.ready.slice(0, limit);
    return { rows: locals.map((l) => ({ fed: l.fed, unfed: l.tokens.length - l.fed })), locals };
  }

  /** A batch takes the planned rows of the last view (indices into it) off the queue. */
  take(rows: readonly number[]): void {
    if (rows.every((r, i) => r === i)) return void this.ready.splice(0, rows.length);
    // decode rows come first in a plan, so its indices are not in order: splice from the back
    for (const r of rows.slice().sort((a, b) => b - a)) this.ready.splice(r, 1);
  }

  /** Queues `local` for a cache reservation of its whole context (which the pool can hold) and admits what fits; true when it got one at once. */
  admit(local: LocalRequest): boolean {
    this.admissionQueue.push(local);
    return this.admitWaiting().includes(local);
  }

  /** Admits the waiting locals that now fit (planAdmission decides), evicting cached prefixes first, then pending-return caches. */
  admitWaiting(): LocalRequest[] {
    const admitted: LocalRequest[] = [];
    const pool = this.pool;
    while (this.admissionQueue.length > 0) {
      this.evictPrefixesFor(this.admissionQueue[0].spec.maxLength);
      const waiting = this.admissionQueue.map((l) => l.spec.maxLength);
      const capacity = pool.capacityTokens - pool.prefixTokenCount;
      // the pending-return caches are looked up only when what waits cannot all fit without them
      const victims = pool.reservedTokenCount + waiting.reduce((s, n) => s + n, 0) <= capacity ? [] : this.evictable();
      const plan = planAdmission({ capacity, reserved: pool.reservedTokenCount, waiting, evictable: victims.map((l) => l.cache!.reserved) });
      if (plan.admit === 0) break;
      for (const victim of victims.slice(0, plan.evict)) {
        this.dropCache(victim);
        this.stats.evictions++;
      }
      for (const local of this.admissionQueue.splice(0, plan.admit)) {
        local.cache = pool.tryOpen(local.spec.maxLength);
        if (!local.cache) throw new Error(`request ${local.id}: admitted by the plan, yet its ${local.spec.maxLength} tokens do not fit the KV pool`);
        this.stats.admissions++;
        local.counters.admissions[local.model]++;
        this.startFromPrefix(local);
        admitted.push(local);
      }
    }
    return admitted;
  }

  /** Drops cached prefixes, oldest use first, until `need` tokens fit beside the reservations, if evicting can make it fit at all. */
  private evictPrefixesFor(need: number): void {
    const { prefix, pool } = this;
    if (!prefix || prefix.size === 0) return;
    const evictable = this.evictable().reduce((s, l) => s + l.cache!.reserved, 0);
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
    if (!this.runner.fork(hit.entry.cacheId, local.cacheId, hit.length)) return this.prefix.discard(hit.entry);
    local.cache!.fed += hit.length;
    local.cachedPrefix = hit.length;
    // the prompt's own prefill (nothing generated yet): what usage reports as cached prompt tokens
    if (local.tokens.length === local.spec.promptLength) local.counters.cachedPrompt = Math.max(local.counters.cachedPrompt, hit.length);
    this.stats.prefixHits += hit.length;
  }

  fed(local: LocalRequest, n: number): void {
    local.cache!.fed += n;
    local.counters.tokensFed[local.model] += n;
  }

  /** The local is done with its cache: the prefix cache keeps it, or it is freed (`keep` false: it died with the runner). */
  retire(local: LocalRequest, keep: boolean): void {
    if (!local.cache) return;
    if (!this.prefix || !keep) return this.dropCache(local);
    const { cacheId, fed } = local;
    this.clearCache(local);
    this.prefix.insert(cacheId, local.tokens.slice(0, fed));
    // an unbounded pool bounds its prefixes by count
    while (this.pool.capacityTokens === Infinity && this.prefix.size > MAX_PREFIX_ENTRIES) this.prefix.evictOne();
  }

  private dropCache(local: LocalRequest): void {
    if (!local.cache) return;
    this.runner.release(local.cacheId);
    this.clearCache(local);
  }

  private clearCache(local: LocalRequest): void {
    this.pool.close(local.cache!);
    local.cache = null;
    local.cachedPrefix = 0;
  }
}
