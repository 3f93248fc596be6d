// The timeline opens what it exports: events → Export view / Export all (Chrome trace) → Open trace… gives the same
// events, batches and handoffs; a file it cannot read gets one plain sentence; exporting nothing says so.
import { describe, expect, it } from 'vitest';
import { EMBED_FORMAT, toChromeTrace } from '../../shared/perfetto.ts';
import { generateTrace, toJsonLines } from '../../shared/timeline/generateTrace.ts';
import { NOT_A_TRACE, parseTrace } from '../../shared/timeline/parseTrace.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { toEvents } from '../../designer/src/timeline/toEvents.ts';
import { exportTraceFile, openTraceFile, type FileSource } from '../../designer/src/timeline/traceFile.ts';
import { checkChromeTrace } from './checkChromeTrace.ts';

const events = generateTrace({ algorithm: 'r2r', requests: 40, concurrency: 8, maxTokens: 24, seed: 7 });

/** The page's file path without the DOM: Open trace… (traceFile → store) and Export (store window → traceFile), as the controller does. */
class Page {
  store = new EventStore({ capacity: 200_000 });
  source: FileSource | null = null;
  view = { t0: -Infinity, t1: Infinity };
  notice = '';
  invalid = 0;
  open(text: string, name = 'trace.json'): this {
    const f = openTraceFile(text, name);
    this.store = new EventStore({ capacity: 200_000 });
    this.store.addMany(f.events);
    this.source = f.source;
    this.invalid = f.source.error ? 0 : f.source.invalid;
    return this;
  }
  setView(t0: number, t1: number): void {
    this.view = { t0, t1 };
  }
  exportEvents(scope: 'view' | 'all'): TraceEvent[] {
    return scope === 'all' ? toEvents(this.store) : toEvents(this.store, this.view.t0, this.view.t1);
  }
  /** The saved file's text, or null (and a notice) when there is nothing to export. */
  download(scope: 'view' | 'all'): string | null {
    const f = exportTraceFile(this.exportEvents(scope), scope, this.store.size);
    if ('nothing' in f) {
      this.notice = f.nothing;
      return null;
    }
    return f.json;
  }
  counts() {
    const s = this.store;
    let paired = 0;
    for (let i = 0; i < s.handoffs.length; i++) {
      const p = s.handoffs.phys(i);
      if (s.batches.physOfAbs(s.handoffs.cols.fromAbs[p]) >= 0 && s.batches.physOfAbs(s.handoffs.cols.toAbs[p]) >= 0) paired++;
    }
    return {
      batches: s.batches.length,
      handoffs: s.handoffs.length,
      queues: s.queues.length,
      states: s.states.length,
      requests: s.requests.size,
      configs: s.configs.length,
      lanes: s.lanes.slice(),
      paired,
    };
  }
}

/** What the person sees: batches per lane with their ids, members and times; handoffs with their ends. */
function picture(c: Page) {
  const ev = c.exportEvents('all');
  return { counts: c.counts(), batches: ev.filter((e) => e.type === 'batch'), handoffs: ev.filter((e) => e.type === 'handoff') };
}

const opened = (text: string, name = 'trace.json'): Page => new Page().open(text, name);

/** Key order does not matter (the store rebuilds objects), values do. */
const canon = (x: unknown): unknown =>
  Array.isArray(x)
    ? x.map(canon)
    : x && typeof x === 'object'
      ? Object.fromEntries(
          Object.entries(x)
            .filter(([, v]) => v !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, v]) => [k, canon(v)]),
        )
      : x;
const sortKey = (e: TraceEvent): string => JSON.stringify(canon(e));
const same = (a: readonly TraceEvent[], b: readonly TraceEvent[]) => expect([...a].map(sortKey).sort()).toEqual([...b].map(sortKey).sort());

describe('Open trace… reads what Export writes', () => {
  const src = opened(toJsonLines(events), 'run.jsonl');
  const all = src.exportEvents('all');

  it('Export all → open: the same events, batches and handoffs', () => {
    const text = src.download('all')!;
    const c = opened(text);
    expect(c.source).toMatchObject({ kind: 'file', format: 'chrome', invalid: 0 });
    expect(c.source?.error).toBeUndefined();
    expect(c.invalid).toBe(0);
    same(c.exportEvents('all'), all);
    same(c.exportEvents('all'), events);
    const [p, q] = [picture(c), picture(src)];
    expect(p.counts).toEqual(q.counts);
    expect(p.batches.map(canon)).toEqual(q.batches.map(canon));
    expect(p.handoffs.map(canon)).toEqual(q.handoffs.map(canon));
    expect(p.counts.paired).toBeGreaterThan(0);
  });

  it('Export view → open: exactly the events of the window (the config in force included)', () => {
    const b = all.filter((e) => e.type === 'batch');
    const t0 = b[Math.floor(b.length / 3)].start;
    const t1 = b[Math.floor((2 * b.length) / 3)].end;
    src.setView(t0, t1);
    const inView = src.exportEvents('view');
    expect(inView.length).toBeGreaterThan(0);
    expect(inView.length).toBeLessThan(all.length);
    const c = opened(src.download('view')!);
    same(c.exportEvents('all'), inView);
    expect(c.exportEvents('all').filter((e) => e.type === 'config').length).toBeGreaterThan(0);
    expect(c.counts().batches).toBe(inView.filter((e) => e.type === 'batch').length);
    expect(c.counts().handoffs).toBe(inView.filter((e) => e.type === 'handoff').length);
  });

  it('the export is still a well-formed Chrome trace for Perfetto, carrying our events as a top-level extra', () => {
    const trace = JSON.parse(src.download('all')!) as ReturnType<typeof toChromeTrace>;
    expect(checkChromeTrace(trace)).toEqual([]);
    expect(trace.tokenrouter?.format).toBe(EMBED_FORMAT);
    expect(trace.tokenrouter?.events.length).toBe(all.length);
  });

  it('a Chrome trace without the embedded copy (an older export) is rebuilt from its slices and flows', () => {
    const trace = toChromeTrace(all);
    delete trace.tokenrouter;
    const parsed = parseTrace(JSON.stringify(trace));
    expect(parsed.error).toBeUndefined();
    expect(parsed.invalid).toBe(0);
    const strip = (e: TraceEvent) => (e.type === 'batch' ? { ...e, steps: undefined, aheadRows: undefined } : e);
    const batches = parsed.events.filter((e) => e.type === 'batch');
    const want = all.filter((e) => e.type === 'batch');
    expect(batches.length).toBe(want.length);
    const byKey = new Map(batches.map((e) => [`${e.model}/${e.batchId}`, e]));
    for (const w of want) {
      const g = byKey.get(`${w.model}/${w.batchId}`)!;
      expect({ ...strip(g), start: 0, end: 0 }).toEqual({ ...strip(w), start: 0, end: 0 });
      expect(g.start).toBeCloseTo(w.start, 2);
      expect(g.end).toBeCloseTo(w.end, 2);
    }
    same(
      parsed.events.filter((e) => e.type === 'handoff'),
      all.filter((e) => e.type === 'handoff'),
    );
    same(
      parsed.events.filter((e) => e.type === 'config'),
      all
        .filter((e) => e.type === 'config')
        .map((e) => ({ ...e, lookahead: undefined }))
        .map((e) => JSON.parse(JSON.stringify(e))),
    );
    const c = opened(JSON.stringify(trace));
    expect(c.counts().batches).toBe(want.length);
    // Slice times are whole µs there, so a handoff at the very instant its receiving batch starts may not pair: nearly all do.
    expect(c.counts().paired).toBeGreaterThan(0.95 * picture(src).counts.paired);
  });

  it('JSON lines and a JSON array still open', () => {
    expect(opened(toJsonLines(events), 'a.jsonl').counts().batches).toBe(src.counts().batches);
    expect(opened(JSON.stringify(events)).counts().batches).toBe(src.counts().batches);
  });
});

describe('a file it cannot read gets a sentence a person understands', () => {
  const cases: [string, string, RegExp][] = [
    ['garbage', 'PK\u0003\u0004 \u0000\u0001 this is a zip, not a trace\n%%%', /not a TokenRouter trace/],
    ['JSON of the wrong kind', JSON.stringify({ name: 'package', version: '1.0.0', dependencies: { zod: '^3' } }), /not a TokenRouter trace/],
    ['JSON lines of the wrong kind', '{"level":"info","msg":"listening"}\n{"level":"warn","msg":"slow"}\n', /not a TokenRouter trace/],
    ['a JSON array of other things', JSON.stringify([{ id: 1 }, { id: 2 }]), /not a TokenRouter trace/],
    [
      "somebody else's Chrome trace",
      JSON.stringify({ traceEvents: [{ name: 'Layout', ph: 'X', ts: 1, dur: 2, pid: 7, tid: 7 }] }),
      /Chrome trace was not exported from the TokenRouter timeline/,
    ],
    ['an empty file', '  \n', /empty/],
  ];
  for (const [what, text, re] of cases) {
    it(what, () => {
      const c = opened(text, 'x.json');
      expect(c.source?.kind).toBe('file');
      const err = c.source?.error ?? '';
      expect(err).toMatch(re);
      // One sentence, no schema dump (zod speaks of "expected", "received", "invalid_type", paths with dots).
      expect(err).not.toMatch(/invalid_type|received|Expected|Required|\[|\{/);
      expect(err.trim().endsWith('.')).toBe(true);
      expect(c.invalid).toBe(0);
      expect(c.store.size).toBe(0);
    });
  }
  it('the sentence names both formats', () => expect(NOT_A_TRACE).toMatch(/JSON lines.*Chrome trace exported from this page/));

  it('a file with some bad lines opens the rest and says which line, plainly', () => {
    const lines = toJsonLines(events.slice(0, 50)).trim().split('\n');
    lines.splice(3, 0, 'not json at all', '{"type":"batch","model":"small"}', '{"type":"teleport","t":1}');
    const parsed = parseTrace(lines.join('\n'));
    expect(parsed.error).toBeUndefined();
    expect(parsed.invalid).toBe(3);
    expect(parsed.events.length).toBe(50);
    expect(parsed.firstError).toBe('line 4 is not JSON');
    const again = parseTrace(lines.filter((l) => l !== 'not json at all').join('\n'));
    expect(again.firstError).toMatch(/^line 4 \(a batch event\) has a missing or wrong "[a-zA-Z]+"$/);
  });
});

describe('Export with nothing to export says so', () => {
  it('an empty page', () => {
    const c = new Page();
    expect(c.exportEvents('view')).toEqual([]);
    expect(c.download('view')).toBeNull();
    expect(c.notice).toMatch(/^Nothing to export: no events have been loaded/);
    expect(c.download('all')).toBeNull();
  });
  it('a window with no events in it', () => {
    const c = opened(toJsonLines(events), 'run.jsonl');
    const end = c.store.latestT;
    c.setView(end + 10_000, end + 20_000);
    expect(c.exportEvents('view').filter((e) => e.type !== 'config')).toEqual([]);
    expect(c.download('view')).toBeNull();
    expect(c.notice).toMatch(/no events in the visible window.*Export all/);
    expect(c.download('all')).not.toBeNull();
  });
});
