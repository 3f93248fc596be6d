// One engine's prefix cache: runner caches kept after their request let go of them, found by the longest prefix of a context.
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { EngineStats } from './engineStats.ts';
import type { LocalRequest } from './localRequest.ts';

/** Entries kept at most when the pool is unbounded (a bounded pool's room bounds them). */
const MAX_UNBOUNDED_ENTRIES = 256;

/** What room-making reads of the KV pool (CachePool). */
interface Room {
  readonly capacityTokens: number;
  readonly reservedTokenCount: number;
}

/** A cache the runner still holds, kept for the prompts that start with its tokens. */
export interface PrefixEntry {
  readonly cacheId: number;
  /** The tokens it holds, from position 0. */
  readonly tokens: readonly number[];
}

/**
 * Entries are whole caches (a runner copies a prefix into a new cache), so an entry whose tokens begin another's goes. Entries are
 * never in a running step: all are evictable, least recently used first. A lookup compares at most the tokens held, which the pool bounds.
 */
export class PrefixCache {
  /** By cacheId, least recently used first (a touch re-inserts). */
  private readonly lru = new Map<number, PrefixEntry>();

  constructor(private readonly drop: (cacheId: number, tokens: number) => void) {}

  get size(): number {
    return this.lru.size;
  }

  /** KV tokens the entries hold in all. */
  get heldTokens(): number {
    let n = 0;
    for (const e of this.lru.values()) n += e.tokens.length;
    return n;
  }

  /** The entry holding the longest prefix of `tokens` and that prefix's length, cut to `limit`; null when none shares a first token. */
  match(tokens: readonly number[], limit: number): { entry: PrefixEntry; length: number } | null {
    let entry: PrefixEntry | null = null;
    let longest = 0;
    for (const e of this.lru.values()) {
      const n = common(e.tokens, tokens);
      if (n > longest) [entry, longest] = [e, n];
    }
    const length = Math.min(longest, limit);
    if (!entry || length <= 0) return null;
    this.touch(entry);
    return { entry, length };
  }

  /** Keeps cache `cacheId`, holding `tokens`, unless an entry already holds them; entries it extends are dropped for it. */
  insert(cacheId: number, tokens: readonly number[]): void {
    if (tokens.length === 0) return this.drop(cacheId, 0);
    for (const e of this.lru.values()) {
      const n = common(e.tokens, tokens);
      if (n === tokens.length) {
        this.touch(e);
        return this.drop(cacheId, tokens.length);
      }
      if (n === e.tokens.length) this.remove(e);
    }
    this.lru.set(cacheId, { cacheId, tokens });
  }

  /** A fresh cache starts as a copy of the longest cached prefix of the context (the step still feeds at least one token). */
  startFrom(local: LocalRequest, runner: Pick<ModelRunner, 'fork'>, stats: EngineStats): void {
    // penalties count the token ids a cache holds, which a copied prefix does not bring along
    if (local.spec.sampling.penalties) return;
    stats.prefixQueries += local.tokens.length;
    const hit = this.match(local.tokens, local.tokens.length - 1);
    if (!hit) return;
    // a fork the runner refused: it does not hold that entry
    if (!runner.fork(hit.entry.cacheId, local.cacheId, hit.length)) return this.remove(hit.entry);
    local.cache!.fed += hit.length;
    local.cachedPrefix = hit.length;
    // the prompt's own prefill (nothing generated yet): what usage reports as cached prompt tokens
    if (local.tokens.length === local.spec.promptLength) local.counters.cachedPrompt = Math.max(local.counters.cachedPrompt, hit.length);
    stats.prefixHits += hit.length;
  }

  /** Keeps the cache a request let go of; a pool of unbounded room bounds the entries by count. */
  keep(cacheId: number, tokens: readonly number[], pool: Room): void {
    this.insert(cacheId, tokens);
    while (pool.capacityTokens === Infinity && this.size > MAX_UNBOUNDED_ENTRIES) this.evictOne();
  }

  /** Drops entries, oldest use first, until `need` tokens fit beside the reservations, if evicting can make it fit at all (`evictable`: what pending-return caches could free). */
  makeRoom(pool: Room, need: number, evictable: () => number, stats: EngineStats): void {
    if (this.size === 0 || pool.reservedTokenCount - evictable() + need > pool.capacityTokens) return;
    while (this.size > 0 && pool.reservedTokenCount + this.heldTokens + need > pool.capacityTokens) {
      this.evictOne();
      stats.prefixEvictions++;
    }
  }

  /** Drops the least recently used entry; the tokens it freed (0: none left). */
  evictOne(): number {
    const first = this.lru.values().next();
    if (first.done) return 0;
    this.remove(first.value);
    return first.value.tokens.length;
  }

  clear(): void {
    for (const e of this.lru.values()) this.remove(e);
  }

  /** The runner died with every cache: forget the entries without handing them back. */
  forget(): void {
    this.lru.clear();
  }

  /** Each entry once (for checks). */
  entries(): IterableIterator<PrefixEntry> {
    return this.lru.values();
  }

  private touch(entry: PrefixEntry): void {
    this.lru.delete(entry.cacheId);
    this.lru.set(entry.cacheId, entry);
  }

  private remove(entry: PrefixEntry): void {
    this.lru.delete(entry.cacheId);
    this.drop(entry.cacheId, entry.tokens.length);
  }
}

/** How many tokens `a` and `b` share from the start. */
function common(a: readonly number[], b: readonly number[]): number {
  const end = Math.min(a.length, b.length);
  let n = 0;
  while (n < end && a[n] === b[n]) n++;
  return n;
}
