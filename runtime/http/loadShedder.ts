// Load shedding at the entry: refuses a request whose predicted wait for a slot exceeds its SLO.
//
// A request whose predicted wait for a concurrency slot exceeds
// scheduling.slo.maxQueueDelayMs is refused at once (429, Retry-After) instead of queueing to miss its SLO.
import type { TraceEvent } from '../../shared/trace.ts';
import { TokenRouterError } from '../errors.ts';

/** What the shedder reads about the entry. */
export interface EntryView {
  readonly queuedCount: number;
  readonly clock: { now(): number };
}

export interface ShedDecision {
  /** Predicted ms a request arriving now waits before it is admitted. */
  predictedDelayMs: number;
  /** Seconds after which the queue should be back under the bound (for Retry-After), ≥ 1. */
  retryAfterS: number;
}

/**
 * The prediction is Little's law at the entry: the queue ahead (plus this request) over the rate at
 * which requests left it, measured over the last `windowMs`. Until a slot has been handed out in the
 * window the rate is unknown and nothing is shed (the cluster's maxQueue still bounds the queue).
 */
export class LoadShedder {
  private admissions: number[] = [];
  /** Requests refused so far (also in /metrics as tokenrouter_requests_shed_total). */
  shed = 0;

  constructor(
    private readonly entry: EntryView,
    readonly maxQueueDelayMs: number,
    readonly windowMs = 10_000,
    private readonly onShed: (d: ShedDecision) => void = () => {},
  ) {}

  /** Feed every trace event here: admissions (a request handed a slot) are what the rate is read from. */
  readonly onEvent = (e: TraceEvent): void => {
    if (e.type === 'request-state' && e.model === null && e.state === 'admitted') this.admissions.push(e.t);
  };

  /** Admissions per ms over the window, or null while there were none. */
  private admissionRate(now: number): number | null {
    const cut = now - this.windowMs;
    let i = 0;
    while (i < this.admissions.length && this.admissions[i] < cut) i++;
    if (i > 0) this.admissions = this.admissions.slice(i);
    if (this.admissions.length < 2) return null;
    const span = Math.max(now - this.admissions[0], 1);
    return this.admissions.length / span;
  }

  /** The decision for a request arriving now: null = admit it. */
  decide(): ShedDecision | null {
    const queued = this.entry.queuedCount;
    if (queued === 0) return null;
    const rate = this.admissionRate(this.entry.clock.now());
    if (rate === null) return null;
    const predictedDelayMs = (queued + 1) / rate;
    if (predictedDelayMs <= this.maxQueueDelayMs) return null;
    return { predictedDelayMs, retryAfterS: Math.max(1, Math.ceil((predictedDelayMs - this.maxQueueDelayMs) / 1000)) };
  }

  /** Throws the 429 the HTTP layer answers with when the request should be shed. */
  check(): void {
    const d = this.decide();
    if (!d) return;
    this.shed++;
    this.onShed(d);
    throw new TokenRouterError(
      'overloaded',
      `predicted queueing delay ${Math.round(d.predictedDelayMs)} ms exceeds scheduling.slo.maxQueueDelayMs ${this.maxQueueDelayMs} ms; retry after ${d.retryAfterS} s`,
      null,
      { retry_after_s: d.retryAfterS, predicted_queue_delay_ms: Math.round(d.predictedDelayMs) },
    );
  }
}
