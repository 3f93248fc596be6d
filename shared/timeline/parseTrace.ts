// Reads a recorded trace (JSON lines or a JSON array of TraceEvent), validating every event at the edge.
import { traceEventSchema, type TraceEvent } from '../trace.ts';

export interface ParsedTrace {
  events: TraceEvent[];
  /** Events (or lines) rejected by validation; they are skipped, not fatal. */
  invalid: number;
  firstError?: string;
}

/** The time at which the runtime emits an event: a batch when it ends, everything else at its t. */
export const emissionTime = (e: TraceEvent): number => (e.type === 'batch' ? e.end : e.t);

export function parseTrace(text: string): ParsedTrace {
  const trimmed = text.trimStart();
  let raw: unknown[];
  let invalid = 0;
  let firstError: string | undefined;
  if (trimmed.startsWith('[') || trimmed.startsWith('{"events"') || trimmed.startsWith('{ "events"')) {
    const parsed: unknown = JSON.parse(trimmed);
    raw = Array.isArray(parsed) ? parsed : ((parsed as { events?: unknown[] }).events ?? []);
  } else {
    raw = [];
    for (const line of text.split('\n')) {
      const l = line.trim();
      if (!l) continue;
      try { raw.push(JSON.parse(l)); } catch (err) { invalid++; firstError ??= `bad JSON line: ${String(err)}`; }
    }
  }
  const events: TraceEvent[] = [];
  for (const r of raw) {
    const res = traceEventSchema.safeParse(r);
    if (res.success) events.push(res.data);
    else { invalid++; firstError ??= res.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '); }
  }
  // Replay in emission order, exactly as a live feed would deliver it (stable for ties).
  const keyed = events.map((e, i) => ({ e, i, k: emissionTime(e) }));
  keyed.sort((a, b) => a.k - b.k || a.i - b.i);
  return { events: keyed.map((x) => x.e), invalid, firstError };
}
