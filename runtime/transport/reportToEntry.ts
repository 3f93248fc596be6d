// One output loop for every placement: a report's events, trace and batch count, handed to the entry in order.
import type { EngineEntry, EngineReport } from '../core/messages.ts';

export function reportToEntry(entry: EngineEntry, r: EngineReport): void {
  // one cascade: requests the entry starts as others finish join one batch of an engine beside it
  entry.cascade(() => {
    if (r.trace.length > 0) entry.traced(r.trace);
    for (const e of r.events) {
      if (e.type === 'commit') entry.commit(e);
      else if (e.type === 'moved') entry.moved(e.requestId, e.to, e.hops);
      else entry.finish(e);
    }
    entry.reported(r.returned);
  });
}
