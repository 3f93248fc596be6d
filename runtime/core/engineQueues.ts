// One engine's queues, KV pool and batches: ready FIFO, admission queue and a step's rows (pure planners decide), eviction, prefix cache use.
import type { ModelRunner, StepPhase } from '../runner/modelRunner.ts';
import type { Batch, EngineStats } from './engineStats.ts';
import type { KvCache, LocalRequest } from './localRequest.ts';
import { PrefixCache } from './prefixCache.ts';

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

export class EngineQueues {
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
    const { pool, prefix } = this;
    while (this.admissionQueue.length > 0) {
      prefix?.makeRoom(pool, this.admissionQueue[0].spec.maxLength, () => this.evictable().reduce((s, l) => s + l.cache!.reserved, 0), this.stats);
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
        prefix?.startFrom(local, this.runner, this.stats);
        admitted.push(local);
      }
    }
    return admitted;
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
    this.prefix.keep(cacheId, local.tokens.slice(0, fed), this.pool);
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

// --- a step's batch: which ready rows it takes (a pure planner), the batch in flight ---

/** One ready request as the planner sees it: tokens in its cache (0: the step prefills), tokens the step would feed to catch up. */
export type ReadyRow = { readonly fed: number; readonly unfed: number };

/** `maxStepTokens`: tokens one step feeds at most, all rows together (vLLM's `max_num_batched_tokens`); absent or Infinity: no bound. */
export type BatchPolicy = { maxBatch: number; maxStepTokens?: number };

export interface BatchPlan {
  /** Indices into the ready list, in launch order: decode rows first, then prompt chunks. */
  rows: number[];
  /** Tokens each planned row feeds (same order as `rows`): below its `unfed` for a chunk that leaves the rest to later steps. */
  feed: number[];
  phase: StepPhase;
  /** Tokens fed in all. */
  tokens: number;
}

/** Decode rows first, then rows with several tokens to feed, each in FIFO order and given what is left of the token budget (vLLM's chunked prefill). */
export function planBatch(ready: readonly ReadyRow[], policy: BatchPolicy): BatchPlan {
  const plan: BatchPlan = { rows: [], feed: [], phase: 'decode', tokens: 0 };
  let budget = policy.maxStepTokens ?? Infinity;
  for (const decode of [true, false]) {
    for (let i = 0; i < ready.length && plan.rows.length < policy.maxBatch && budget > 0; i++) {
      const r = ready[i];
      if (r.unfed <= 1 !== decode) continue;
      const n = decode ? r.unfed : Math.min(r.unfed, budget);
      plan.rows.push(i);
      plan.feed.push(n);
      plan.tokens += n;
      budget -= Math.max(1, n);
      if (r.fed === 0) plan.phase = 'prefill';
      else if (n > 1 && plan.phase === 'decode') plan.phase = 'extend';
    }
  }
  return plan;
}

/** A batch of the planned rows of `ready`, launched at `start` (clock ms): each row feeds the next `plan.feed[k]` tokens its cache has not seen. */
export function newBatch(id: number, plan: BatchPlan, ready: readonly LocalRequest[], start: number): Batch {
  const locals = plan.rows.map((i) => ready[i]);
  let cachedTokens = 0;
  for (const local of locals) {
    cachedTokens += local.cachedPrefix;
    local.cachedPrefix = 0;
  }
  const rows = locals.map((local, k) => ({
    cacheId: local.cacheId,
    requestId: local.id,
    tokens: local.tokens.slice(local.fed, local.fed + plan.feed[k]),
    position: local.fed,
    // below min_tokens the models' EOS is left out of the draw
    sampling: local.generated < local.spec.minTokens ? { ...local.spec.sampling, suppressEos: true } : local.spec.sampling,
    wants: local.wants,
  }));
  const { phase, tokens } = plan;
  return { id, locals, rows, start, phase, tokens, wallMs: 0, applied: 0, resultAt: 0, modelMs: 0, cachedTokens, maskedRows: 0 };
}
