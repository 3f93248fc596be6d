// In-memory trace sink: a ring of the newest `limit` events, and the listeners each event is handed to as it is emitted.
import type { TraceEvent, TraceEventOf, TraceSink } from '../../shared/trace.ts';

export class TraceRecorder implements TraceSink {
  /** Grows to `limit`, then each event takes the oldest one's place at `head`. */
  private ring: TraceEvent[] = [];
  private head = 0;
  private readonly listeners = new Set<(e: TraceEvent) => void>();
  /** Events that left the window because of `limit`. */
  dropped = 0;
  /** The newest config event among those dropped: the one still in force where the kept window starts. */
  private droppedConfig: TraceEventOf<'config'> | null = null;

  constructor(readonly limit = Infinity) {}

  emit(event: TraceEvent): void {
    if (this.ring.length < this.limit) this.ring.push(event);
    else if (this.limit > 0) {
      const old = this.ring[this.head];
      if (old.type === 'config') this.droppedConfig = old;
      this.ring[this.head] = event;
      this.head = (this.head + 1) % this.limit;
      this.dropped++;
    }
    for (const l of this.listeners) l(event);
  }

  /**
   * The newest `limit` events, led by the config in force when they start if it is older: a long
   * run's export and the live feed's snapshot still say which mode and thresholds were in force.
   */
  get events(): readonly TraceEvent[] {
    return this.recent(this.ring.length);
  }

  /** The newest `n` events (at most `limit`), oldest first, led by the config in force when they start if it is older. */
  recent(n: number): readonly TraceEvent[] {
    const held = this.ring.length;
    const k = Math.max(0, Math.min(n, held));
    const at = (i: number) => this.ring[(this.head + i) % held];
    const window: TraceEvent[] = new Array(k);
    for (let i = 0; i < k; i++) window[i] = at(held - k + i);
    let inForce = this.droppedConfig;
    for (let i = held - k - 1; i >= 0; i--) {
      const e = at(i);
      if (e.type === 'config') {
        inForce = e;
        break;
      }
    }
    return inForce ? [inForce, ...window] : window;
  }

  /** Empties the window (the config in force is kept: it still holds). */
  clear(): void {
    const events = this.events;
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i];
      if (e.type === 'config') {
        this.droppedConfig = e;
        break;
      }
    }
    this.ring = [];
    this.head = 0;
  }

  /** A reader: events reach it as they are emitted. Returns the way to stop. */
  subscribe(listener: (e: TraceEvent) => void): () => void {
    // a wrapper per call, so one function subscribed twice is two readers
    const own = (e: TraceEvent) => listener(e);
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }
}
