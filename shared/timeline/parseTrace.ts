// Reads a recorded trace — JSON lines or a JSON array of TraceEvent, or a Chrome trace this page exported — validating every event at the edge.
import { fromChromeTrace, isChromeTrace } from '../perfetto.ts';
import { traceEventSchema, type TraceEvent } from '../trace.ts';

export type TraceFormat = 'jsonl' | 'json' | 'chrome';

export interface ParsedTrace {
  events: TraceEvent[];
  /** Events (or lines) rejected by validation; they are skipped, not fatal. */
  invalid: number;
  /** What went wrong first, in words a person reads (never a schema dump). */
  firstError?: string;
  /** Set when nothing in the file could be read: one sentence saying why. */
  error?: string;
  format?: TraceFormat;
}

/** The time at which the runtime emits an event: a batch when it ends, everything else at its t. */
export const emissionTime = (e: TraceEvent): number => (e.type === 'batch' ? e.end : e.t);

export const NOT_A_TRACE = 'This file is not a TokenRouter trace: expected JSON lines of trace events, or a Chrome trace exported from this page.';

const KINDS = new Set(['batch', 'handoff', 'request-state', 'queue', 'request-end', 'config']);

/** One event that failed validation, said plainly: where it is, what it claims to be, and the first field that is wrong. */
function describeInvalid(raw: unknown, where: string, issues: readonly { path: readonly PropertyKey[] }[]): string {
  const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined;
  if (typeof type !== 'string') return `${where} is not a trace event (it has no "type")`;
  if (!KINDS.has(type)) return `${where} has an unknown event type "${type}"`;
  const field = issues[0]?.path.map(String).join('.');
  return field ? `${where} (a ${type} event) has a missing or wrong "${field}"` : `${where} (a ${type} event) is malformed`;
}

export function parseTrace(text: string): ParsedTrace {
  const trimmed = text.trim();
  if (!trimmed) return { events: [], invalid: 0, error: 'This file is empty: there is no trace in it.' };
  let raw: unknown[];
  let invalid = 0;
  let firstError: string | undefined;
  let format: TraceFormat;
  let where = (i: number): string => `event ${i + 1}`;
  let whole: unknown;
  let wholeOk = false;
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    try {
      whole = JSON.parse(trimmed);
      wholeOk = true;
    } catch {
      /* maybe JSON lines whose first line is an object */
    }
  }
  if (wholeOk && isChromeTrace(whole)) {
    format = 'chrome';
    raw = fromChromeTrace(whole).events;
  } else if (wholeOk && (Array.isArray(whole) || Array.isArray((whole as { events?: unknown }).events))) {
    format = 'json';
    raw = Array.isArray(whole) ? whole : (whole as { events: unknown[] }).events;
  } else {
    format = 'jsonl';
    raw = [];
    const lineOf: number[] = [];
    const lines = text.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const l = lines[n].trim();
      if (!l) continue;
      try {
        raw.push(JSON.parse(l));
        lineOf.push(n + 1);
      } catch {
        invalid++;
        firstError ??= `line ${n + 1} is not JSON`;
      }
    }
    where = (i) => `line ${lineOf[i]}`;
  }
  const events: TraceEvent[] = [];
  raw.forEach((r, i) => {
    const res = traceEventSchema.safeParse(r);
    if (res.success) events.push(res.data);
    else {
      invalid++;
      firstError ??= describeInvalid(r, where(i), res.error.issues);
    }
  });
  if (!events.length) {
    const ours = raw.some((r) => typeof r === 'object' && r !== null && KINDS.has(String((r as { type?: unknown }).type)));
    const error =
      format === 'chrome'
        ? 'This Chrome trace was not exported from the TokenRouter timeline: it has no TokenRouter batches or events in it.'
        : ours
          ? `This file looks like TokenRouter trace events, but none of them could be read (first problem: ${firstError}).`
          : raw.length === 0 && format !== 'jsonl'
            ? 'This file holds no trace events.'
            : NOT_A_TRACE;
    return { events: [], invalid, firstError: ours ? firstError : undefined, error, format };
  }
  // Replay in emission order, exactly as a live feed would deliver it (stable for ties).
  const keyed = events.map((e, i) => ({ e, i, k: emissionTime(e) }));
  keyed.sort((a, b) => a.k - b.k || a.i - b.i);
  return { events: keyed.map((x) => x.e), invalid, firstError, format };
}
