// KV accounting for one sub-server: reservations and cached prefixes gate admission, live bytes follow every cached token.

export class CachePool {
  private reservedTokens = 0;
  private cachedTokens = 0;
  /** What the prefix cache holds (its tokens are cached too, and take room as a reservation does). */
  prefix: { readonly heldTokens: number } | null = null;

  constructor(
    /** Token capacity of this pool (weights already taken out by the memory plan). */
    public capacityTokens: number,
    readonly kvBytesPerToken: number,
  ) {}

  /** Reserves room for a request's whole context, so a running request never runs out mid-decode. */
  tryReserve(tokens: number): boolean {
    if (this.reservedTokens + this.prefixTokenCount + tokens > this.capacityTokens) return false;
    this.reservedTokens += tokens;
    return true;
  }

  unreserve(tokens: number): void {
    this.reservedTokens -= tokens;
  }

  /** A step appended `tokens` to some cache (negative when a cache is dropped). */
  cached(tokens: number): void {
    this.cachedTokens += tokens;
  }

  get usedBytes(): number {
    return this.cachedTokens * this.kvBytesPerToken;
  }

  get reservedBytes(): number {
    return this.reservedTokens * this.kvBytesPerToken;
  }

  get cachedTokenCount(): number {
    return this.cachedTokens;
  }

  get reservedTokenCount(): number {
    return this.reservedTokens;
  }

  get prefixTokenCount(): number {
    return this.prefix?.heldTokens ?? 0;
  }
}
