// Float32 buffers for a batch's KV, handed back when no request's KV lives in them any more, so a re-pack or a grow reuses one instead of allocating.
/**
 * Why: a re-pack that allocates its batch's KV afresh (≈ 0.6 MB on the small model at batch 8),
 * with rows joining and leaving every few steps at natural EOS, makes V8 count those ArrayBuffers
 * as external memory and force a young collection about every 100 ms on the engine thread.
 * A buffer taken from the pool holds stale KV: callers write every slot they feed unmasked.
 */
export class KvBufferPool {
  private readonly free: Float32Array[] = [];
  private bytes = 0;
  /** Takes served from a kept buffer. */
  reused = 0;

  constructor(
    /** Buffers kept at most (the smallest go first): two batches' worth covers a re-pack's old and new. */
    private readonly keep: number,
    /**
     * Bytes kept at most (the biggest go first). Why: kept buffers are resident memory no request
     * uses. Wide batches (n = 64 choices) re-pack rarely, so keeping theirs buys little, and 12 of
     * them (3.4-4.3 MB each on small) can hold ~45 MB: the slow-readers test's RSS bound failed in CI.
     * A whole batch's KV at batch 8 is ~0.6 MB on small and ~6.5 MB on large.
     */
    private readonly keepBytes = 16 * 2 ** 20,
  ) {}

  /** A view of exactly `n` floats over a kept buffer (the smallest that fits and is not wastefully big), or a new one with room to grow. */
  take(n: number): Float32Array {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const len = this.free[i].length;
      if (len >= n && len <= 2 * n && (best < 0 || len < this.free[best].length)) best = i;
    }
    if (best < 0) return new Float32Array(new ArrayBuffer(Math.ceil(n * 1.25) * 4), 0, n);
    this.reused++;
    const whole = this.free[best];
    this.free[best] = this.free[this.free.length - 1];
    this.free.pop();
    this.bytes -= whole.byteLength;
    return whole.length === n ? whole : new Float32Array(whole.buffer, 0, n);
  }

  /** `a` (from `take`) is no longer read or written by anyone. */
  give(a: Float32Array): void {
    const whole = a.length * 4 === a.buffer.byteLength ? a : new Float32Array(a.buffer);
    if (whole.byteLength > this.keepBytes) return;
    this.free.push(whole);
    this.bytes += whole.byteLength;
    while (this.free.length > this.keep || this.bytes > this.keepBytes) {
      const overBytes = this.free.length <= this.keep;
      let pick = 0;
      for (let i = 1; i < this.free.length; i++)
        if (overBytes ? this.free[i].length > this.free[pick].length : this.free[i].length < this.free[pick].length) pick = i;
      this.bytes -= this.free[pick].byteLength;
      this.free.splice(pick, 1);
    }
  }

  /** Buffers kept now (for tests). */
  get size(): number {
    return this.free.length;
  }

  /** Bytes kept now (for tests). */
  get keptBytes(): number {
    return this.bytes;
  }
}
