// The offered load seen at the entry over a sliding window: arrival rate and mean output length, for the SLO-aware controller.
import type { TraceEvent } from '../../shared/trace.ts';

export interface TrafficEstimate {
  /** Requests arriving per second (admitted, plus the growth of the entry queue). */
  arrivalRps: number;
  /** Mean committed output tokens of the requests that finished. */
  meanOutputTokens: number;
}

/**
 * Arrivals are not traced (a request waiting for a slot is not yet anyone's), admissions are: so
 * arrivals in the window = admissions + (queue now − queue at the window's start), which is exact
 * for a queue sampled at both ends and stays right past saturation, where admissions alone would
 * read the service rate.
 */
export class TrafficEstimator {
  private admissions: number[] = [];
  private ends: { t: number; tokens: number }[] = [];
  private queue: { t: number; n: number }[] = [];

  constructor(readonly windowMs: number) {}

  onEvent(e: TraceEvent): void {
    if (e.type === 'request-state' && e.model === null && e.state === 'admitted') this.admissions.push(e.t);
    else if (e.type === 'request-end' && e.status === 'done') this.ends.push({ t: e.t, tokens: e.tokens.length });
  }

  /** The entry queue's length now (the controller samples it on every tick). */
  sampleQueue(t: number, n: number): void {
    this.queue.push({ t, n });
  }

  /** The estimate over the window, or null until it holds `minEnds` finished requests and a full window of time. */
  estimate(now: number, minEnds = 20): TrafficEstimate | null {
    const cut = now - this.windowMs;
    const drop = <T>(xs: T[], t: (x: T) => number) => {
      let i = 0;
      while (i < xs.length && t(xs[i]) < cut) i++;
      return i > 0 ? xs.slice(i) : xs;
    };
    this.admissions = drop(this.admissions, (t) => t);
    this.ends = drop(this.ends, (x) => x.t);
    // Keep one queue sample at or before the cut: the queue length when the window opened.
    let q = 0;
    while (q + 1 < this.queue.length && this.queue[q + 1].t <= cut) q++;
    if (q > 0) this.queue = this.queue.slice(q);
    if (this.ends.length < minEnds || this.queue.length === 0 || this.queue[0].t > cut) return null;
    const grown = this.queue[this.queue.length - 1].n - this.queue[0].n;
    const span = now - this.queue[0].t;
    return {
      arrivalRps: (Math.max(0, this.admissions.length + grown) / span) * 1000,
      meanOutputTokens: this.ends.reduce((s, x) => s + x.tokens, 0) / this.ends.length,
    };
  }
}
