// The whole painter draws exactly what the pre-split drawTimeline drew: the draw list of four fixed frames against a fixture recorded from the old code.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { drawTimeline } from '../../designer/src/timeline/drawTimeline.ts';
import { RecordingContext, installPath2D } from './recordingCanvas.ts';
import { scenes } from './paintScenes.ts';

/**
 * Recorded once from the single-function drawTimeline (commit 0ad06a7) with WRITE_DRAWLIST=1; one op per
 * line, so a change shows as a readable diff. Re-record only for an intended change of the picture.
 */
const FIXTURE = join(import.meta.dirname, '../fixtures/timeline-drawlist.jsonl');

installPath2D();

function record(): Map<string, { ops: string[]; stats: string }> {
  const out = new Map<string, { ops: string[]; stats: string }>();
  for (const s of scenes()) {
    const ctx = new RecordingContext();
    const stats = drawTimeline(ctx, s.store, s.layout, s.v, s.o);
    out.set(s.name, { ops: ctx.ops.map((op) => JSON.stringify(op)), stats: JSON.stringify(stats) });
  }
  return out;
}

function serialise(rec: Map<string, { ops: string[]; stats: string }>): string {
  const lines: string[] = [];
  for (const [name, r] of rec) lines.push(JSON.stringify(['scene', name, r.ops.length]), JSON.stringify(['stats', JSON.parse(r.stats)]), ...r.ops);
  return `${lines.join('\n')}\n`;
}

function parse(text: string): Map<string, { ops: string[]; stats: string }> {
  const out = new Map<string, { ops: string[]; stats: string }>();
  let cur: { ops: string[]; stats: string } | null = null;
  for (const line of text.split('\n')) {
    if (!line) continue;
    const head = JSON.parse(line) as unknown[];
    if (head[0] === 'scene') {
      cur = { ops: [], stats: '' };
      out.set(String(head[1]), cur);
    } else if (head[0] === 'stats' && cur && !cur.stats) cur.stats = JSON.stringify(head[1]);
    else cur!.ops.push(line);
  }
  return out;
}

describe('drawTimeline draw list', () => {
  if (process.env.WRITE_DRAWLIST) writeFileSync(FIXTURE, serialise(record()));
  const want = existsSync(FIXTURE) ? parse(readFileSync(FIXTURE, 'utf8')) : new Map();
  const got = record();

  it('covers the four frames of the fixture', () => {
    expect([...got.keys()]).toEqual([...want.keys()]);
    expect(want.size).toBe(4);
  });

  for (const name of got.keys()) {
    it(`${name}: same ops in the same order, same stats`, () => {
      const a = got.get(name)!;
      const b = want.get(name);
      expect(b, 'scene missing from the fixture').toBeDefined();
      // The first differing op with a little context reads better than a diff of thousands of lines.
      let k = 0;
      while (k < a.ops.length && k < b!.ops.length && a.ops[k] === b!.ops[k]) k++;
      const at = (ops: string[]): string[] => ops.slice(Math.max(0, k - 3), k + 3);
      expect({ firstDifference: k, ops: at(a.ops) }).toEqual({ firstDifference: Math.max(a.ops.length, b!.ops.length), ops: at(b!.ops) });
      expect(JSON.parse(a.stats)).toEqual(JSON.parse(b!.stats));
    });
  }
});
