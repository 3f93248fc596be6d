// In-memory trace sink: keeps events (optionally only the newest `limit`) and fans them out to listeners.
import type { TraceEvent, TraceEventOf, TraceSink } from '../../shared/trace.ts';

export class TraceRecorder implements TraceSink {
  private buf: TraceEvent[] = [];
  private readonly listeners = new Set<(e: TraceEvent) => void>();
  /** Events dropped from the front because of `limit`. */
  dropped = 0;
  /** The newest config event among those dropped: the one still in force where the kept window starts. */
  private droppedConfig: TraceEventOf<'config'> | null = null;

  constructor(private readonly limit = Infinity) {}

  emit(event: TraceEvent): void {
    this.buf.push(event);
    if (this.buf.length > this.limit * 2) {
      const cut = this.buf.length - this.limit;
      this.droppedConfig = lastConfig(this.buf, cut) ?? this.droppedConfig;
      this.buf = this.buf.slice(cut);
      this.dropped += cut;
    }
    for (const l of this.listeners) l(event);
  }

  /**
   * The newest `limit` events, led by the config in force when they start if it is older: a long
   * run's export and the live feed's snapshot still say which mode and thresholds were in force.
   */
  get events(): readonly TraceEvent[] {
    return this.recent(this.limit);
  }

  /** The newest `n` events (at most `limit`), led by the config in force when they start if it is older. */
  recent(n: number): readonly TraceEvent[] {
    const start = Math.max(0, this.buf.length - Math.min(n, this.limit));
    const window = start > 0 ? this.buf.slice(start) : this.buf;
    const inForce = lastConfig(this.buf, start) ?? this.droppedConfig;
    return inForce ? [inForce, ...window] : window;
  }

  /** Empties the window (the config in force is kept: it still holds). */
  clear(): void {
    this.droppedConfig = lastConfig(this.buf, this.buf.length) ?? this.droppedConfig;
    this.buf = [];
  }

  subscribe(listener: (e: TraceEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The last config event in events[0..end). */
function lastConfig(events: readonly TraceEvent[], end: number): TraceEventOf<'config'> | null {
  for (let i = end - 1; i >= 0; i--) {
    const e = events[i];
    if (e.type === 'config') return e;
  }
  return null;
}
