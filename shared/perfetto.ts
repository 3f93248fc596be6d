// Export of trace events to Chrome Trace Event JSON (opens in Perfetto / chrome://tracing): batches, handoff flows, queues, requests.
import type { TraceEvent, TraceEventOf } from './trace.ts';
import { pairHandoffs } from './timeline/pairHandoffs.ts';

/** One event of the Trace Event Format (the subset we emit). Times in microseconds. */
export interface ChromeTraceEvent {
  name: string;
  ph: 'X' | 'M' | 's' | 'f' | 'i' | 'C';
  ts: number;
  pid: number;
  tid: number;
  dur?: number;
  cat?: string;
  id?: number;
  /** Flow finish binding: 'e' binds to the enclosing slice (not the next one). */
  bp?: 'e';
  /** Instant scope: thread, process or global. */
  s?: 't' | 'p' | 'g';
  args?: Record<string, string | number | boolean | null | readonly string[]>;
}

export interface ChromeTrace {
  traceEvents: ChromeTraceEvent[];
  displayTimeUnit: 'ms' | 'ns';
  otherData?: Record<string, string>;
  /**
   * The exported trace events themselves, so the timeline reopens its own export losslessly.
   * Perfetto and chrome://tracing ignore top-level keys they do not know.
   */
  tokenrouter?: { format: typeof EMBED_FORMAT; version: 1; events: TraceEvent[] };
}

/** Marks the embedded copy of our events in an exported Chrome trace. */
export const EMBED_FORMAT = 'tokenrouter-trace-events';

/** Runtime clock is in ms; Trace Event Format wants µs. Integers keep slice arithmetic exact (no float overlap). */
const us = (ms: number): number => Math.round(ms * 1000);

/** pid 1 holds runtime-wide marks (config changes) and request lifetimes; models start at 2. */
const RUNTIME_PID = 1;

interface Interval {
  startUs: number;
  endUs: number;
}

/**
 * Greedy interval partitioning: each interval goes to the lowest track whose last slice ended by
 * its start, so slices on one track never overlap. Returns the 1-based track per input index.
 */
export function assignTracks(items: readonly Interval[]): number[] {
  const order = items.map((_, i) => i).sort((a, b) => items[a].startUs - items[b].startUs || items[b].endUs - items[a].endUs);
  const lastEnd: number[] = [];
  const track = new Array<number>(items.length);
  for (const i of order) {
    let k = lastEnd.findIndex((e) => e <= items[i].startUs);
    if (k < 0) {
      k = lastEnd.length;
      lastEnd.push(0);
    }
    lastEnd[k] = items[i].endUs;
    track[i] = k + 1;
  }
  return track;
}

export function toChromeTrace(events: readonly TraceEvent[]): ChromeTrace {
  const out: ChromeTraceEvent[] = [];
  const batches: TraceEventOf<'batch'>[] = [];
  const handoffs: TraceEventOf<'handoff'>[] = [];
  const pids = new Map<string, number>();
  const pidOf = (model: string): number => {
    let p = pids.get(model);
    if (p === undefined) pids.set(model, (p = pids.size + 2));
    return p;
  };
  for (const e of events) {
    if (e.type === 'batch') {
      batches.push(e);
      pidOf(e.model);
    } else if (e.type === 'handoff') {
      handoffs.push(e);
      pidOf(e.from);
      pidOf(e.to);
    } else if (e.type === 'queue') pidOf(e.model);
    else if (e.type === 'config') for (const m of Object.keys(e.thresholds)) pidOf(m);
  }

  // Batch slices, one track (tid) per non-overlapping stream of a model.
  const sliceOf: Interval[] = batches.map((b) => ({ startUs: us(b.start), endUs: Math.max(us(b.start), us(b.end)) }));
  const tidOf = new Array<number>(batches.length);
  const tracksPerPid = new Map<number, number>();
  for (const [model, pid] of pids) {
    const idx = batches.map((b, i) => (b.model === model ? i : -1)).filter((i) => i >= 0);
    const tracks = assignTracks(idx.map((i) => sliceOf[i]));
    idx.forEach((i, k) => {
      tidOf[i] = tracks[k];
    });
    tracksPerPid.set(pid, Math.max(1, ...tracks));
  }
  batches.forEach((b, i) => {
    out.push({
      name: `${b.phase} ×${b.requestIds.length}`,
      cat: `batch,${b.phase}`,
      ph: 'X',
      pid: pidOf(b.model),
      tid: tidOf[i],
      ts: sliceOf[i].startUs,
      dur: sliceOf[i].endUs - sliceOf[i].startUs,
      args: { batchId: b.batchId, size: b.requestIds.length, tokens: b.tokens, phase: b.phase, requestIds: b.requestIds },
    });
  });

  // Handoff flows: "s" inside the sending slice, "f" (bp:e) inside the receiving slice, one id per pair.
  const inside = (iv: Interval, preferUs: number): number => {
    if (iv.endUs - iv.startUs < 2) return iv.startUs;
    return Math.min(Math.max(preferUs, iv.startUs + 1), iv.endUs - 1);
  };
  let flowId = 0;
  for (const { handoff: h, from, to } of pairHandoffs(batches, handoffs)) {
    const name = h.kept ? 'handoff (kept)' : 'handoff (discarded)';
    const args = { requestId: h.requestId, from: h.from, to: h.to, tokens: h.tokens, kept: h.kept, batchId: h.batchId, tMs: h.t };
    if (from >= 0 && to >= 0) {
      const id = ++flowId;
      out.push({ name, cat: 'handoff', ph: 's', id, pid: pidOf(h.from), tid: tidOf[from], ts: inside(sliceOf[from], us(h.t)), args });
      out.push({ name, cat: 'handoff', ph: 'f', bp: 'e', id, pid: pidOf(h.to), tid: tidOf[to], ts: inside(sliceOf[to], sliceOf[to].startUs) });
    } else {
      // Half a pair (the other batch fell outside the exported window): an instant keeps the fact without a dangling flow.
      const pid = from >= 0 ? pidOf(h.from) : pidOf(h.to);
      out.push({ name: `${name} (unpaired)`, cat: 'handoff', ph: 'i', s: 't', pid, tid: from >= 0 ? tidOf[from] : 1, ts: us(h.t), args });
    }
  }

  // Queue lengths as counter tracks; config changes and request lifetimes on the runtime process.
  const ends: TraceEventOf<'request-end'>[] = [];
  for (const e of events) {
    if (e.type === 'queue') out.push({ name: 'queue', ph: 'C', pid: pidOf(e.model), tid: 0, ts: us(e.t), args: { waiting: e.length } });
    else if (e.type === 'config') {
      out.push({
        name: `config: ${e.mode}`,
        cat: 'config',
        ph: 'i',
        s: 'g',
        pid: RUNTIME_PID,
        tid: 0,
        ts: us(e.t),
        args: { mode: e.mode, retainState: e.retainState, maxWaitMs: e.maxWaitMs, thresholds: JSON.stringify(e.thresholds) },
      });
    } else if (e.type === 'request-end') ends.push(e);
  }
  const reqIv = ends.map((e) => ({ startUs: us(e.admittedAt), endUs: Math.max(us(e.admittedAt), us(e.t)) }));
  const reqTid = assignTracks(reqIv);
  ends.forEach((e, i) => {
    out.push({
      name: e.requestId,
      cat: 'request',
      ph: 'X',
      pid: RUNTIME_PID,
      tid: 100 + reqTid[i],
      ts: reqIv[i].startUs,
      dur: reqIv[i].endUs - reqIv[i].startUs,
      args: {
        status: e.status,
        tokens: e.tokens.length,
        handoffs: e.handoffs,
        ttftMs: e.firstTokenAt === null ? null : e.firstTokenAt - e.admittedAt,
        runs: e.runs.map((r) => `${r.model}:${r.count}`),
      },
    });
  });

  // Metadata: a name per process and per track, sorted so lanes read in model order.
  const meta: ChromeTraceEvent[] = [
    { name: 'process_name', ph: 'M', pid: RUNTIME_PID, tid: 0, ts: 0, args: { name: 'TokenRouter runtime' } },
    { name: 'process_sort_index', ph: 'M', pid: RUNTIME_PID, tid: 0, ts: 0, args: { sort_index: 0 } },
  ];
  const reqTracks = Math.max(0, ...reqTid);
  for (let k = 1; k <= reqTracks; k++) meta.push({ name: 'thread_name', ph: 'M', pid: RUNTIME_PID, tid: 100 + k, ts: 0, args: { name: `requests ${k}` } });
  for (const [model, pid] of pids) {
    meta.push({ name: 'process_name', ph: 'M', pid, tid: 0, ts: 0, args: { name: model } });
    meta.push({ name: 'process_sort_index', ph: 'M', pid, tid: 0, ts: 0, args: { sort_index: pid } });
    const n = tracksPerPid.get(pid) ?? 1;
    for (let k = 1; k <= n; k++)
      meta.push({ name: 'thread_name', ph: 'M', pid, tid: k, ts: 0, args: { name: k === 1 ? 'batches' : `batches (overlap ${k})` } });
  }
  return {
    traceEvents: [...meta, ...out],
    displayTimeUnit: 'ms',
    otherData: { source: 'tokenrouter-ts timeline' },
    tokenrouter: { format: EMBED_FORMAT, version: 1, events: [...events] },
  };
}

/** Does this parsed JSON look like a Chrome Trace Event file (object form with traceEvents)? */
export function isChromeTrace(x: unknown): x is { traceEvents: unknown[]; tokenrouter?: unknown; otherData?: unknown } {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && Array.isArray((x as { traceEvents?: unknown }).traceEvents);
}

/**
 * Our events back from a Chrome trace. An export of this page carries them verbatim (`tokenrouter.events`);
 * without that copy (an older export), batches, handoffs, queue lengths and config changes are rebuilt
 * from the slices, flows, counters and marks `toChromeTrace` writes (request lifetimes are summaries there,
 * so request-end events cannot be rebuilt). Returns raw objects: the caller validates them.
 */
export function fromChromeTrace(trace: { traceEvents: unknown[]; tokenrouter?: unknown }): { events: unknown[]; embedded: boolean } {
  const emb = trace.tokenrouter as { format?: unknown; events?: unknown } | undefined;
  if (emb && emb.format === EMBED_FORMAT && Array.isArray(emb.events)) return { events: emb.events, embedded: true };
  const evs = trace.traceEvents.filter((e): e is ChromeTraceEvent => typeof e === 'object' && e !== null && typeof (e as ChromeTraceEvent).ph === 'string');
  const model = new Map<number, string>();
  for (const e of evs)
    if (e.ph === 'M' && e.name === 'process_name' && typeof e.args?.name === 'string' && e.pid !== RUNTIME_PID) model.set(e.pid, e.args.name);
  const ms = (t: number): number => t / 1000;
  const out: unknown[] = [];
  const slices: { pid: number; tid: number; ts: number; end: number; batchId: unknown }[] = [];
  for (const e of evs) {
    const a = e.args ?? {};
    if (e.ph === 'X' && e.cat?.startsWith('batch') && model.has(e.pid)) {
      slices.push({ pid: e.pid, tid: e.tid, ts: e.ts, end: e.ts + (e.dur ?? 0), batchId: a.batchId });
      out.push({
        type: 'batch',
        model: model.get(e.pid),
        batchId: a.batchId,
        requestIds: a.requestIds,
        phase: a.phase,
        tokens: a.tokens,
        start: ms(e.ts),
        end: ms(e.ts + (e.dur ?? 0)),
      });
    } else if (e.ph === 'C' && e.name === 'queue' && model.has(e.pid)) {
      out.push({ type: 'queue', t: ms(e.ts), model: model.get(e.pid), length: a.waiting });
    } else if (e.ph === 'i' && e.cat === 'config') {
      let thresholds: unknown = a.thresholds;
      try {
        if (typeof thresholds === 'string') thresholds = JSON.parse(thresholds);
      } catch {
        /* left invalid: validation reports it */
      }
      out.push({ type: 'config', t: ms(e.ts), mode: a.mode, retainState: a.retainState, maxWaitMs: a.maxWaitMs, thresholds });
    }
  }
  for (const e of evs) {
    if (e.cat !== 'handoff' || (e.ph !== 's' && e.ph !== 'i')) continue;
    const a = e.args ?? {};
    const enclosing = model.get(e.pid) !== a.from ? undefined : slices.find((s) => s.pid === e.pid && s.tid === e.tid && s.ts <= e.ts && e.ts <= s.end);
    out.push({
      type: 'handoff',
      t: typeof a.tMs === 'number' ? a.tMs : ms(e.ts),
      requestId: a.requestId,
      from: a.from,
      to: a.to,
      batchId: typeof a.batchId === 'number' ? a.batchId : (enclosing?.batchId ?? -1),
      tokens: a.tokens,
      kept: a.kept,
    });
  }
  return { events: out, embedded: false };
}
