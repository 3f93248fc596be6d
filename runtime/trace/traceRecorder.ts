// In-memory trace sink: keeps events (optionally only the newest `limit`) and fans them out to listeners; says when the first reader comes and the last goes.
import type { TraceEvent, TraceEventOf, TraceSink } from '../../shared/trace.ts';

export class TraceRecorder implements TraceSink {
  private buf: TraceEvent[] = [];
  private readonly listeners = new Set<(e: TraceEvent) => void>();
  /** Events dropped from the front because of `limit`. */
  dropped = 0;
  /** The newest config event among those dropped: the one still in force where the kept window starts. */
  private droppedConfig: TraceEventOf<'config'> | null = null;

  /** Told true when the first listener subscribes and false when the last leaves: tracing costs nothing without a reader. */
  private onReaders: (reading: boolean) => void = () => {};

  constructor(private readonly limit = Infinity) {}

  /** Something subscribed, so events are wanted. */
  get reading(): boolean {
    return this.listeners.size > 0;
  }

  /** Calls `f` with whether anything reads now, and again whenever that changes. */
  whenRead(f: (reading: boolean) => void): void {
    this.onReaders = f;
    f(this.reading);
  }

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

  /** A reader: events reach it as they are emitted, and tracing runs while any is subscribed. */
  subscribe(listener: (e: TraceEvent) => void): () => void {
    // a wrapper per call, so one function subscribed twice is two readers
    const own = (e: TraceEvent) => listener(e);
    this.listeners.add(own);
    if (this.listeners.size === 1) this.onReaders(true);
    return () => {
      if (!this.listeners.delete(own)) return;
      if (this.listeners.size === 0) this.onReaders(false);
    };
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
