// A counting semaphore: the load generator's fixed-concurrency gate, as in vLLM's benchmark_serving.
export class Semaphore {
  private available: number;
  private readonly waiters: (() => void)[] = [];

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError(`a semaphore needs ≥ 1 permit, got ${permits}`);
    this.available = permits;
  }

  /** Resolves once a permit is held; waiters are served first come, first served. */
  acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    // A waiting task takes the permit directly, so a burst of acquirers cannot overtake it.
    if (next) next();
    else this.available++;
  }

  /** Runs `fn` holding a permit. */
  async with<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  get waiting(): number {
    return this.waiters.length;
  }
}
