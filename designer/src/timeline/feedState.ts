// What the feed says about itself and the server: connection status, events counted, dropped or invalid, per-model gauges, a refused token, the server's clock.
import type { TraceEvent } from '../../../shared/trace.ts';
import { adminAccess } from './feed.ts';
import type { FeedHandlers, FeedStatus, LiveStats } from './feedMessages.ts';
import type { LaneGauge } from './paint/frame.ts';

export type Counts = Record<TraceEvent['type'], number>;
export const zeroCounts = (): Counts => ({ batch: 0, handoff: 0, 'request-state': 0, queue: 0, 'request-end': 0, config: 0 });

export class FeedState {
  connection: FeedStatus | 'idle' = 'idle';
  connectionDetail = '';
  /** Events the server dropped for this (slow) client, summed over `dropped` messages. */
  serverDropped = 0;
  /** Events that failed validation, from the feed or an opened file. */
  invalid = 0;
  invalidMessage = '';
  received: Counts = zeroCounts();
  snapshots = 0;
  gauges = new Map<string, LaneGauge>();
  /** The server refused this page's admin token (or it has none): the banner asks for it. */
  tokenRefused = false;
  /** Events applied per second over the last 2 s. */
  ingestRate = 0;
  private clockOffset: number | null = null;
  private rateWindow: { t: number; n: number }[] = [];

  constructor(private readonly changed: () => void) {}

  /** `n` events were applied to the store. */
  applied(n: number): void {
    const now = performance.now();
    this.rateWindow.push({ t: now, n });
    while (this.rateWindow.length && this.rateWindow[0].t < now - 2000) this.rateWindow.shift();
    this.ingestRate = (this.rateWindow.reduce((a, x) => a + x.n, 0) / 2000) * 1000;
  }

  /** The server's time, estimated; null without a live feed. */
  serverNow(): number | null {
    return this.clockOffset === null ? null : performance.now() + this.clockOffset;
  }

  /** Starts the clock estimate over from a snapshot's `now`. */
  setClock(serverNow: number): void {
    this.clockOffset = serverNow - performance.now();
  }

  /**
   * Server clock estimate. A message's `now` arrives late by its transit time, so the largest
   * (now - receipt) seen is the best offset; and no event can come from the future, so the
   * estimate never falls behind the newest event (else following would stall between batches).
   */
  observeClock(serverNow: number): void {
    const off = serverNow - performance.now();
    if (this.clockOffset === null || off > this.clockOffset) this.clockOffset = off;
  }

  /** The feed stopped: no clock, no gauges. */
  stopped(): void {
    this.clockOffset = null;
    this.connection = 'idle';
    this.gauges = new Map();
  }

  /** The handlers for what the feed says about itself; snapshots and events go to `events`. */
  handlers(events: Pick<FeedHandlers, 'onSnapshot' | 'onEvents'>): FeedHandlers {
    return {
      ...events,
      onStats: (s: LiveStats) => {
        this.observeClock(s.now);
        this.gauges = new Map(s.models.map((m) => [m.name, m]));
        this.changed();
      },
      onDropped: (count) => {
        this.serverDropped += count;
        this.changed();
      },
      onStatus: (status, detail) => {
        this.connection = status;
        this.connectionDetail = detail ?? '';
        if (status === 'open') this.tokenRefused = false;
        if (status === 'closed')
          void adminAccess().then((a) => {
            if (a === 'refused' && this.connection !== 'open') {
              this.tokenRefused = true;
              this.changed();
            }
          });
        this.changed();
      },
      onInvalid: (n, first) => {
        this.invalid += n;
        this.invalidMessage ||= first;
        this.changed();
      },
    };
  }
}
