// Test helper: checks a Chrome Trace Event JSON object against the rules of the Trace Event Format we rely on.
import type { ChromeTrace, ChromeTraceEvent } from '../../shared/perfetto.ts';

/** Returns a list of problems (empty when the trace is well formed). */
export function checkChromeTrace(trace: ChromeTrace): string[] {
  const problems: string[] = [];
  if (!Array.isArray(trace.traceEvents)) return ['traceEvents is not an array'];
  if (trace.displayTimeUnit !== 'ms' && trace.displayTimeUnit !== 'ns') problems.push(`bad displayTimeUnit ${String(trace.displayTimeUnit)}`);
  const named = new Set<number>();
  const usedPids = new Set<number>();
  const tracks = new Map<string, ChromeTraceEvent[]>();
  const flows = new Map<number, { s: ChromeTraceEvent[]; f: ChromeTraceEvent[] }>();
  trace.traceEvents.forEach((e, i) => {
    for (const k of ['name', 'ph', 'ts', 'pid', 'tid'] as const) if (e[k] === undefined || e[k] === null) problems.push(`event ${i} lacks ${k}`);
    if (typeof e.name !== 'string') problems.push(`event ${i} name not a string`);
    for (const k of ['ts', 'pid', 'tid'] as const) if (typeof e[k] !== 'number' || !Number.isFinite(e[k])) problems.push(`event ${i} ${k} not a finite number`);
    if (e.ph === 'M') {
      if (e.name === 'process_name') {
        if (typeof e.args?.name !== 'string' || !e.args.name) problems.push(`process_name ${i} without args.name`);
        named.add(e.pid);
      }
      return;
    }
    usedPids.add(e.pid);
    if (e.ph === 'X') {
      if (typeof e.dur !== 'number' || !(e.dur >= 0)) problems.push(`X event ${i} lacks a non-negative dur`);
      const key = `${e.pid}/${e.tid}`;
      let list = tracks.get(key);
      if (!list) tracks.set(key, (list = []));
      list.push(e);
    } else if (e.ph === 's' || e.ph === 'f') {
      if (typeof e.id !== 'number' && typeof e.id !== 'string') {
        problems.push(`flow ${i} without id`);
        return;
      }
      const id = Number(e.id);
      let f = flows.get(id);
      if (!f) flows.set(id, (f = { s: [], f: [] }));
      f[e.ph].push(e);
      if (e.ph === 'f' && e.bp !== 'e') problems.push(`flow finish ${i} without bp:"e"`);
    } else if (!['i', 'C', 'b', 'e', 'n', 'B', 'E'].includes(e.ph)) problems.push(`event ${i} unknown ph ${e.ph}`);
  });
  for (const p of usedPids) if (!named.has(p)) problems.push(`pid ${p} has no process_name metadata`);
  // Slices on one track: sorted by start, each one either nests inside the open one or starts after it ends.
  for (const [key, list] of tracks) {
    list.sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
    const stack: number[] = [];
    for (const e of list) {
      const end = e.ts + e.dur!;
      while (stack.length && stack[stack.length - 1] <= e.ts) stack.pop();
      if (stack.length && end > stack[stack.length - 1]) {
        problems.push(`track ${key}: slice at ${e.ts} overlaps (ends ${end} past ${stack[stack.length - 1]})`);
        break;
      }
      stack.push(end);
    }
  }
  const enclosing = (e: ChromeTraceEvent): ChromeTraceEvent | undefined => tracks.get(`${e.pid}/${e.tid}`)?.find((x) => x.ts <= e.ts && e.ts <= x.ts + x.dur!);
  for (const [id, f] of flows) {
    if (f.s.length !== 1 || f.f.length !== 1) {
      problems.push(`flow ${id}: ${f.s.length} s and ${f.f.length} f`);
      continue;
    }
    const s = f.s[0];
    const fin = f.f[0];
    if (!enclosing(s)) problems.push(`flow ${id}: s at ${s.ts} is not inside a slice of ${s.pid}/${s.tid}`);
    if (!enclosing(fin)) problems.push(`flow ${id}: f at ${fin.ts} is not inside a slice of ${fin.pid}/${fin.tid}`);
    if (fin.ts < s.ts) problems.push(`flow ${id}: finishes before it starts`);
  }
  return problems;
}

/** The slice that encloses a flow event on its track (for tests that check which batch a flow binds to). */
export function enclosingSlice(trace: ChromeTrace, e: ChromeTraceEvent): ChromeTraceEvent | undefined {
  return trace.traceEvents.find((x) => x.ph === 'X' && x.pid === e.pid && x.tid === e.tid && x.ts <= e.ts && e.ts <= x.ts + (x.dur ?? 0));
}
