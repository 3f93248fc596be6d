// In-memory trace sink: keeps events (optionally only the newest `limit`) and fans them out to listeners.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';

export class TraceRecorder implements TraceSink {
  private buf: TraceEvent[] = [];
  private readonly listeners = new Set<(e: TraceEvent) => void>();
  /** Events dropped from the front because of `limit`. */
  dropped = 0;

  constructor(private readonly limit = Infinity) {}

  emit(event: TraceEvent): void {
    this.buf.push(event);
    if (this.buf.length > this.limit * 2) {
      const cut = this.buf.length - this.limit;
      this.buf = this.buf.slice(cut);
      this.dropped += cut;
    }
    for (const l of this.listeners) l(event);
  }

  get events(): readonly TraceEvent[] {
    return this.buf.length > this.limit ? this.buf.slice(this.buf.length - this.limit) : this.buf;
  }

  subscribe(listener: (e: TraceEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  clear(): void {
    this.buf = [];
  }
}
