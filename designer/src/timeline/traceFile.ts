// Files in and out of the timeline, without the DOM: what "Open trace…" makes of a file and what "Export" saves (or why not).
import { toChromeTrace } from '../../../shared/perfetto.ts';
import { parseTrace, type TraceFormat } from '../../../shared/timeline/parseTrace.ts';
import type { TraceEvent } from '../../../shared/trace.ts';

/** An opened file. `error`: nothing in it could be read (one sentence why); the view is then empty. */
export interface FileSource {
  kind: 'file';
  name: string;
  invalid: number;
  firstError?: string;
  error?: string;
  format?: TraceFormat;
}

/** Reads a file the page opens: JSON lines / a JSON array of trace events, or a Chrome trace exported here. */
export function openTraceFile(text: string, name: string): { events: TraceEvent[]; source: FileSource } {
  const parsed = parseTrace(text);
  return {
    events: parsed.events,
    source: { kind: 'file', name, invalid: parsed.invalid, firstError: parsed.firstError, error: parsed.error, format: parsed.format },
  };
}

/**
 * What "Export view" / "Export all" saves: a Chrome trace (Perfetto opens it, and so does this page), or a sentence
 * saying there is nothing to export. `retained`: events the page holds at all (says which sentence fits).
 */
export function exportTraceFile(events: readonly TraceEvent[], scope: 'view' | 'all', retained: number): { json: string } | { nothing: string } {
  // The config in force is exported with any window; on its own it is nothing to look at.
  if (!events.some((e) => e.type !== 'config')) {
    return {
      nothing:
        scope === 'view' && retained > 0
          ? 'Nothing to export: no events in the visible window. Press Fit to see everything, or use Export all.'
          : 'Nothing to export: no events have been loaded or received yet.',
    };
  }
  return { json: JSON.stringify(toChromeTrace(events)) };
}
