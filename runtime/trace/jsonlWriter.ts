// Streams trace events to a JSON-lines file, buffered so tracing stays off the hot path.
import { createWriteStream, type WriteStream } from 'node:fs';
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';

export class JsonlTraceWriter implements TraceSink {
  private readonly out: WriteStream;
  private pending: string[] = [];
  count = 0;

  constructor(path: string) {
    this.out = createWriteStream(path);
  }

  emit(event: TraceEvent): void {
    this.pending.push(JSON.stringify(event));
    this.count++;
    if (this.pending.length >= 1024) this.flush();
  }

  flush(): void {
    if (this.pending.length === 0) return;
    this.out.write(this.pending.join('\n') + '\n');
    this.pending = [];
  }

  close(): Promise<void> {
    this.flush();
    return new Promise((resolve, reject) => this.out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
}
