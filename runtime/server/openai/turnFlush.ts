// Streams' writes gathered over one turn of the event loop, flushed together at its end: one socket write per stream per turn.

/**
 * One step message from an engine commits a token for many streams, and several such messages may
 * be read in the same turn; each stream's share goes out as one SSE write after all of them (as
 * vLLM's RequestOutputCollector merges deltas when the producer runs ahead of the consumer). One
 * setImmediate serves every stream of the server.
 */
export class TurnFlush {
  private readonly due = new Set<() => void>();
  private scheduled = false;

  /** Runs `flush` once at the end of this turn, however often it is asked for in it. */
  request(flush: () => void): void {
    this.due.add(flush);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const list = [...this.due];
    this.due.clear();
    for (const f of list) f();
  };
}
