// A discrete-event virtual clock: timers fire in time order, instantly, so simulations outrun real time.
import type { Clock } from './clock.ts';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class VirtualClock implements Clock {
  private t = 0;
  private seq = 0;
  private heap: Timer[] = [];
  /** Timers fired so far, for progress and speed reports. */
  fired = 0;

  now(): number {
    return this.t;
  }

  setTimeout(fn: (...args: unknown[]) => void, ms: number): Timer | undefined {
    if (!Number.isFinite(ms)) return undefined;
    const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.push(timer);
    return timer;
  }

  clearTimeout(id: unknown): void {
    if (id) (id as Timer).cancelled = true;
  }

  /** Number of timers still scheduled (cancelled ones included until they surface). */
  get pending(): number {
    return this.heap.length;
  }

  /**
   * Fires timers in order until none is left, `until` (virtual ms) is passed, or `stop()` says so.
   * Returns the number of timers fired.
   */
  run(opts: { until?: number; stop?: () => boolean; maxTimers?: number } = {}): number {
    const until = opts.until ?? Infinity;
    const maxTimers = opts.maxTimers ?? Infinity;
    let n = 0;
    while (this.heap.length > 0 && n < maxTimers) {
      const top = this.heap[0];
      if (top.at > until) {
        this.t = until;
        break;
      }
      this.pop();
      if (top.cancelled) continue;
      if (top.at > this.t) this.t = top.at;
      top.fn();
      n++;
      if (opts.stop?.()) break;
    }
    this.fired += n;
    return n;
  }

  private push(timer: Timer): void {
    const h = this.heap;
    h.push(timer);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!earlier(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && earlier(h[l], h[m])) m = l;
      if (r < h.length && earlier(h[r], h[m])) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m], h[i]];
      i = m;
    }
  }
}

function earlier(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
