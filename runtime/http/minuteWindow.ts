// A sliding 60-second window of amounts (requests or tokens) against a per-minute limit, as OpenAI's x-ratelimit-* headers describe it.

const WINDOW_MS = 60_000;

export interface WindowState {
  limit: number;
  remaining: number;
  /** Until the window is empty again (OpenAI: "resets to its initial state"). */
  resetMs: number;
}

export class MinuteWindow {
  // [time, amount] in arrival order; `head` skips those that left the window without shifting the array each time.
  private readonly events: [number, number][] = [];
  private head = 0;
  private sum = 0;

  constructor(
    readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  add(amount: number): void {
    if (amount <= 0) return;
    this.events.push([this.now(), amount]);
    this.sum += amount;
  }

  /** What the window holds at this moment, for the x-ratelimit-* headers. */
  state(): WindowState {
    const t = this.prune();
    const last = this.events[this.events.length - 1];
    return { limit: this.limit, remaining: Math.max(0, this.limit - this.sum), resetMs: this.sum === 0 ? 0 : last[0] + WINDOW_MS - t };
  }

  /** Ms until the window holds less than the limit again: how long a refused client should wait (0: not full). */
  waitMs(): number {
    const t = this.prune();
    let over = this.sum - this.limit;
    for (let i = this.head; i < this.events.length && over >= 0; i++) {
      over -= this.events[i][1];
      if (over < 0) return this.events[i][0] + WINDOW_MS - t;
    }
    return 0;
  }

  private prune(): number {
    const t = this.now();
    while (this.head < this.events.length && this.events[this.head][0] <= t - WINDOW_MS) this.sum -= this.events[this.head++][1];
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events.splice(0, this.head);
      this.head = 0;
    }
    return t;
  }
}

/** OpenAI's duration form for x-ratelimit-reset-*: "20ms", "17s", "6m0s". */
export function resetText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}
