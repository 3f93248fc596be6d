// One engine's KV pool: owns the caches its requests hold (id, tokens cached, room reserved); every count is a sum over them.

/** A cache the pool handed out: the runner's id for it, the tokens in it, and the room reserved for its request's whole context. */
export interface KvCache {
  readonly id: number;
  /** Tokens in the runner's cache (a step feeds the request's tokens from here); only the pool writes it. */
  fed: number;
  readonly reserved: number;
}

/** Runner cache ids are unique in the process: a runner outlives the engines that used it (a bench's borrowed thread). */
let nextCacheId = 1;

export class CachePool {
  /** The caches requests hold, the only record of them: the pool's counts are sums over these. */
  private readonly open = new Set<KvCache>();
  /** What the prefix cache holds (its caches take room as a reservation does, and are counted there). */
  prefix: { readonly heldTokens: number } | null = null;

  constructor(
    /** Token capacity of this pool (weights already taken out by the memory plan). */
    public capacityTokens: number,
    readonly kvBytesPerToken: number,
  ) {}

  /** A cache with room for a request's whole context, so a running request never runs out mid-decode; null: it does not fit. */
  tryOpen(reserve: number): KvCache | null {
    if (this.reservedTokenCount + this.prefixTokenCount + reserve > this.capacityTokens) return null;
    const cache: KvCache = { id: nextCacheId++, fed: 0, reserved: reserve };
    this.open.add(cache);
    return cache;
  }

  /** A step (or a copied prefix) put `tokens` more into the cache. */
  fed(cache: KvCache, tokens: number): void {
    cache.fed += tokens;
  }

  /** The request let go of the cache: its room is free (the runner's release, or the prefix cache taking it over, is the caller's). */
  close(cache: KvCache): void {
    this.open.delete(cache);
  }

  /** The caches requests hold now (the debug checker compares them with the requests). */
  caches(): IterableIterator<KvCache> {
    return this.open.values();
  }

  get cachedTokenCount(): number {
    let n = this.prefixTokenCount;
    for (const c of this.open) n += c.fed;
    return n;
  }

  get reservedTokenCount(): number {
    let n = 0;
    for (const c of this.open) n += c.reserved;
    return n;
  }

  get usedBytes(): number {
    return this.cachedTokenCount * this.kvBytesPerToken;
  }

  get reservedBytes(): number {
    return this.reservedTokenCount * this.kvBytesPerToken;
  }

  get prefixTokenCount(): number {
    return this.prefix?.heldTokens ?? 0;
  }
}
