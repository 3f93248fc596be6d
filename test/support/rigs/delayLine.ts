// Work held for a fixed delay and then run in the order it came: the added latency of a network link, to the tenth of a millisecond.
import { createPreciseAlarm } from './preciseAlarm.ts';

/** An item this close to its release time runs now: the alarm's and this thread's clocks agree to microseconds. */
const DUE_SLACK_MS = 0.02;

export interface DelayStats {
  items: number;
  meanHoldMs: number;
  minHoldMs: number;
  maxHoldMs: number;
}

/**
 * One delay for every item, so first in is first due: one precise alarm (a worker thread, see
 * preciseAlarm.ts) wakes the line at the earliest, and a late wake-up delays the items behind it
 * rather than reordering them.
 *
 * The alarm's message still has to wake this thread, which on a busy machine takes a few hundred
 * microseconds. The line measures that lateness (an average over recent wake-ups) and sets its alarm
 * that much early, so the mean hold is the delay asked for rather than delay + wake-up.
 */
export class DelayLine {
  private readonly items: { due: number; at: number; run: () => void }[] = [];
  private held = { n: 0, sum: 0, min: Infinity, max: 0 };
  /** Mean lateness of recent wake-ups (ms), the alarm's lead; at most half the delay. */
  private lead = 0;
  private target = 0;
  private readonly alarm = createPreciseAlarm(() => this.drain());

  constructor(readonly delayMs: number) {}

  push(run: () => void): void {
    const now = performance.now();
    this.items.push({ due: now + this.delayMs, at: now, run });
    // FIFO with one delay: a pending alarm is never later than this item's due time
    if (!this.alarm.armed) this.arm(now + this.delayMs);
  }

  stats(): DelayStats {
    const h = this.held;
    return { items: h.n, meanHoldMs: h.n ? h.sum / h.n : 0, minHoldMs: h.n ? h.min : 0, maxHoldMs: h.max };
  }

  /** Items still held are dropped (a closed link). */
  async close(): Promise<void> {
    this.items.length = 0;
    await this.alarm.close();
  }

  private arm(due: number): void {
    this.target = due - this.lead;
    this.alarm.arm(this.target);
  }

  private drain(): void {
    const now = performance.now();
    this.lead = Math.min(this.delayMs / 2, Math.max(0, this.lead + (now - this.target - this.lead) / 16));
    const due: { at: number; run: () => void }[] = [];
    while (this.items.length > 0 && this.items[0].due - this.lead <= now + DUE_SLACK_MS) due.push(this.items.shift()!);
    // armed for the head before anything runs: what the runs push comes after it, and must not set a later alarm
    if (this.items.length > 0) this.arm(this.items[0].due);
    const h = this.held;
    for (const item of due) {
      const hold = now - item.at;
      h.n++;
      h.sum += hold;
      if (hold < h.min) h.min = hold;
      if (hold > h.max) h.max = hold;
      item.run();
    }
  }
}
