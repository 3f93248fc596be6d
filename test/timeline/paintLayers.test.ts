// Each paint layer of the timeline on a recorded draw list: a hand-made trace whose pixels are known, one describe per layer.
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { computeLayout, type LaneGeom } from '../../designer/src/timeline/layout.ts';
import { requestPath } from '../../designer/src/timeline/requestPath.ts';
import type { Viewport } from '../../designer/src/timeline/viewport.ts';
import { drawAxis, drawAxisCaption } from '../../designer/src/timeline/paint/axis.ts';
import { drawBatches } from '../../designer/src/timeline/paint/batches.ts';
import { drawConfigMarks } from '../../designer/src/timeline/paint/configMarks.ts';
import { makeFrame, type DrawOptions, type Frame } from '../../designer/src/timeline/paint/frame.ts';
import { BIN, drawHandoffs } from '../../designer/src/timeline/paint/handoffs.ts';
import { drawLaneLabels, LINE_H, stackGutter } from '../../designer/src/timeline/paint/labels.ts';
import { drawLaneBands } from '../../designer/src/timeline/paint/lanes.ts';
import { drawOverlays } from '../../designer/src/timeline/paint/overlays.ts';
import { drawQueues } from '../../designer/src/timeline/paint/queues.ts';
import { drawSelection } from '../../designer/src/timeline/paint/selection.ts';
import { THEME } from '../../designer/src/timeline/paint/theme.ts';
import { drawTooltip } from '../../designer/src/timeline/paint/tooltip.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { CHAR_W, RecordingContext, RecordingPath, type DrawOp } from './recordingCanvas.ts';
import { scenes } from './paintScenes.ts';

// A plot 1000 px wide showing 0..100 ms: 10 px per ms, so t ms is at x = 176 + 10 t.
const X0 = 176;
const x = (t: number): number => X0 + 10 * t;
const events: TraceEvent[] = [
  { type: 'config', t: 0, mode: 'async', retainState: true, thresholds: { A: 1, B: 4 }, maxWaitMs: 5 },
  { type: 'batch', model: 'A', batchId: 1, requestIds: ['r1', 'r2'], phase: 'prefill', tokens: 40, start: 0, end: 10 },
  { type: 'handoff', t: 10, requestId: 'r1', from: 'A', to: 'B', batchId: 1, tokens: 3, kept: false },
  { type: 'batch', model: 'B', batchId: 5, requestIds: ['r1'], phase: 'extend', tokens: 3, start: 20, end: 40 },
  { type: 'handoff', t: 40, requestId: 'r1', from: 'B', to: 'A', batchId: 5, tokens: 1, kept: true },
  // Two decode steps half a pixel long, side by side: too narrow for boxes.
  { type: 'batch', model: 'A', batchId: 2, requestIds: ['r1'], phase: 'decode', tokens: 1, start: 50, end: 50.05 },
  { type: 'batch', model: 'A', batchId: 3, requestIds: ['r2'], phase: 'decode', tokens: 1, start: 50.1, end: 50.15 },
  { type: 'queue', t: 0, model: 'A', length: 2 },
  { type: 'queue', t: 30, model: 'A', length: 6 },
  { type: 'queue', t: 60, model: 'A', length: 0 },
  { type: 'queue', t: 0, model: 'B', length: 1 },
  { type: 'config', t: 70, mode: 'sync', retainState: true, thresholds: { A: 2, B: 4 }, maxWaitMs: 5 },
];
const store = new EventStore();
store.addMany(events);
const layout = computeLayout(store.lanes, X0 + 1000 + 12, 500);
const lane = (m: string): LaneGeom => layout.lanes.find((l) => l.model === m)!;
const A = lane('A');
const B = lane('B');
const v: Viewport = { t0: 0, t1: 100, x0: layout.plotX0, width: layout.plotWidth };
const base: DrawOptions = { path: null, selectedBatch: -1, range: null, hover: null, liveNow: null, origin: 0, gauges: new Map() };
const frame = (o: Partial<DrawOptions> = {}, view: Viewport = v): Frame => makeFrame(store, layout, view, { ...base, ...o }, () => new RecordingPath());
const absOf = (model: string, batchId: number): number => {
  const b = store.batches;
  for (let a = b.evicted; a < b.nextAbs; a++) {
    const p = b.physOfAbs(a);
    if (store.lanes[b.cols.lane[p]] === model && b.cols.batchId[p] === batchId) return a;
  }
  return -1;
};
const r1 = (): ReturnType<typeof requestPath> => requestPath(store, store.requestIndex('r1'));
/** Path ops (M/L/Z) of each strokePath or fillPath, with the style in force. */
const paths = (ctx: RecordingContext, name: 'strokePath' | 'fillPath'): { ops: DrawOp[]; stroke: string; fill: string; dash: number[]; width: number }[] =>
  ctx
    .withState(name)
    .map(({ op, s, dash }) => ({ ops: op[1] as DrawOp[], stroke: String(s.strokeStyle), fill: String(s.fillStyle), dash, width: Number(s.lineWidth) }));

describe('lanes layer', () => {
  it('fills the background, then one band per lane in alternating colours', () => {
    const ctx = new RecordingContext();
    drawLaneBands(ctx, frame());
    expect(ctx.rects()).toEqual([
      { x: 0, y: 0, w: layout.width, h: 500, color: THEME.bg, alpha: 1 },
      { x: 0, y: A.top, w: layout.width, h: A.bottom - A.top, color: THEME.laneA, alpha: 1 },
      { x: 0, y: B.top, w: layout.width, h: B.bottom - B.top, color: THEME.laneB, alpha: 1 },
    ]);
  });
});

describe('axis layer', () => {
  it('draws a tick label every step from the origin, at the tick x', () => {
    const ctx = new RecordingContext();
    const f = frame({ origin: 5 });
    expect(f.step).toBe(10);
    drawAxis(ctx, f);
    const labels = ctx.texts();
    // Ticks on origin + k·step: 5, 15, ..., 95 ms, labelled relative to the origin.
    expect(labels.map((l) => l.text)).toEqual(['0 ms', '10 ms', '20 ms', '30 ms', '40 ms', '50 ms', '60 ms', '70 ms', '80 ms', '90 ms']);
    expect(labels.map((l) => l.x)).toEqual([5, 15, 25, 35, 45, 55, 65, 75, 85, 95].map((t) => x(t) + 0.5 + 4));
    expect(ctx.calls('lineTo')[0]).toEqual(['lineTo', x(5) + 0.5, 500]);
  });
  it('a label at the right edge is drawn left of its tick, inside the canvas (issue 53 item 14)', () => {
    const ctx = new RecordingContext();
    const f = frame(); // ticks at 0, 10, ..., 100 ms: the last on the plot's right edge
    drawAxis(ctx, f);
    const last = ctx.texts().at(-1)!;
    expect(last).toMatchObject({ text: '100 ms', align: 'right', x: x(100) + 0.5 - 4 });
    for (const l of ctx.texts()) expect(l.align === 'right' ? l.x : l.x + l.text.length * CHAR_W).toBeLessThanOrEqual(f.width);
  });
  it('says the step in the gutter corner', () => {
    const ctx = new RecordingContext();
    drawAxisCaption(ctx, frame());
    expect(ctx.texts().map((t) => t.text)).toEqual(['time (+10 ms/tick)']);
  });
});

describe('batches layer', () => {
  it('a wide batch is one box at its x and width, narrow ones merge into one pixel-column run', () => {
    const ctx = new RecordingContext();
    const stats = drawBatches(ctx, frame());
    expect(stats).toEqual({ visibleBatches: 4, batchBoxes: 2, columnRuns: 1 });
    const rects = ctx.rects();
    // The box is one pixel short of its end: the gap between back-to-back boxes.
    expect(rects).toContainEqual({ x: x(0), y: A.batchTop, w: x(10) - x(0) - 1, h: A.batchH, color: THEME.phase.prefill, alpha: 1 });
    expect(rects).toContainEqual({ x: x(20), y: B.batchTop, w: x(40) - x(20) - 1, h: B.batchH, color: THEME.phase.extend, alpha: 1 });
    // Decode steps at 50.0 and 50.1 ms: columns 500 and 501 of the plot, one run two pixels wide.
    expect(rects).toContainEqual({ x: x(50), y: A.batchTop, w: 2, h: A.batchH, color: THEME.phase.decode, alpha: 1 });
    expect(rects).toHaveLength(3);
    expect(ctx.texts().map((t) => [t.text, t.x])).toEqual([
      ['2', (x(0) + x(10)) / 2],
      ['1', (x(20) + x(40)) / 2],
    ]);
  });
  it('dims every box while a request is selected', () => {
    const ctx = new RecordingContext();
    drawBatches(ctx, frame({ path: r1() }));
    expect(ctx.rects().every((r) => r.alpha === 0.32)).toBe(true);
  });
});

describe('queues layer', () => {
  it("each strip's height follows the longest queue in view", () => {
    const ctx = new RecordingContext();
    const { queueEvents, queueMax } = drawQueues(ctx, frame());
    expect(queueEvents).toBe(4);
    expect(queueMax).toEqual([6, 1]);
    const q = ctx.rects().filter((r) => r.color === THEME.queue);
    const bottomA = A.queueTop + A.queueH;
    // A: 2 until 30 ms, 6 (the longest: full height) until 60 ms, then empty.
    // (RectBatch keeps its rectangles in a Float32Array.)
    const f32 = Math.fround;
    expect(q).toContainEqual({ x: x(0), y: f32(bottomA - (2 / 6) * A.queueH), w: 300, h: f32((2 / 6) * A.queueH), color: THEME.queue, alpha: 1 });
    expect(q).toContainEqual({ x: x(30), y: bottomA - A.queueH, w: 300, h: A.queueH, color: THEME.queue, alpha: 1 });
    // B: a queue of 1 is scaled against at least 4 (a floor), and in a file it holds to the plot's edge.
    const bStrip = q.filter((r) => r.y + r.h === B.queueTop + B.queueH);
    expect(bStrip).toEqual([{ x: x(0), y: B.queueTop + B.queueH - B.queueH / 4, w: layout.plotWidth + 2, h: B.queueH / 4, color: THEME.queue, alpha: 1 }]);
  });
  it('on a live feed the last length holds only up to now', () => {
    const ctx = new RecordingContext();
    drawQueues(ctx, frame({ liveNow: 80 }));
    const bStrip = ctx.rects().filter((r) => r.color === THEME.queue && r.y + r.h === B.queueTop + B.queueH);
    expect(bStrip.map((r) => [r.x, r.w])).toEqual([[x(0), 800]]);
  });
});

describe('handoffs layer', () => {
  it("draws an arrow from the sender's end to the receiver's start, dashed when the token was discarded", () => {
    const ctx = new RecordingContext();
    const stats = drawHandoffs(ctx, frame());
    expect(stats).toMatchObject({ visibleHandoffs: 2, arrows: 2, keptArrows: 1, discardedArrows: 1, inFlight: 0 });
    const strokes = paths(ctx, 'strokePath');
    // A → B leaves A's bottom edge at A1's end (10 ms) and lands on B's top edge at B5's start (20 ms).
    const disc = strokes.find((s) => s.stroke === THEME.discarded)!;
    expect(disc.ops).toEqual([
      ['M', x(10), A.batchTop + A.batchH],
      ['L', x(20), B.batchTop],
    ]);
    expect(disc.dash).toEqual([4, 3]);
    // B → A goes up: from B's top edge at 40 ms to A's bottom edge at A2's start (50 ms), solid.
    const kept = strokes.find((s) => s.stroke === THEME.kept)!;
    expect(kept.ops).toEqual([
      ['M', x(40), B.batchTop],
      ['L', x(50), A.batchTop + A.batchH],
    ]);
    expect(kept.dash).toEqual([]);
    // Heads: a closed triangle with its tip on the receiver.
    const heads = paths(ctx, 'fillPath');
    expect(heads.find((h) => h.fill === THEME.discarded)!.ops[0]).toEqual(['M', x(20), B.batchTop]);
    expect(heads.find((h) => h.fill === THEME.kept)!.ops.map((o) => o[0])).toEqual(['M', 'L', 'L', 'Z']);
  });
  it('a handoff without its receiving batch yet is a short stub', () => {
    const s = new EventStore();
    s.addMany(events.slice(0, 3));
    const ctx = new RecordingContext();
    const stats = drawHandoffs(
      ctx,
      makeFrame(s, computeLayout(s.lanes, layout.width, 500), v, base, () => new RecordingPath()),
    );
    expect(stats).toMatchObject({ arrows: 0, inFlight: 1 });
    const stub = paths(ctx, 'strokePath').find((p) => p.stroke === THEME.inFlight)!;
    expect(stub.ops).toEqual([
      ['M', x(10), A.batchTop + A.batchH],
      ['L', x(10) + 8, A.batchTop + A.batchH + (B.batchTop - A.batchTop - A.batchH) / 2],
    ]);
  });
  it('a dense view draws histogram bins in the corridor instead of arrows', () => {
    const sc = scenes()[0];
    const ctx = new RecordingContext();
    const stats = drawHandoffs(
      ctx,
      makeFrame(sc.store, sc.layout, sc.v, sc.o, () => new RecordingPath()),
    );
    expect(stats.arrows).toBeGreaterThan(1200);
    expect(paths(ctx, 'strokePath').filter((p) => p.ops.length > 0)).toEqual([]);
    const bins = ctx.rects();
    const kept = bins.filter((r) => r.color === THEME.kept);
    const disc = bins.filter((r) => r.color === THEME.discarded);
    expect(kept.length).toBeGreaterThan(20);
    expect(disc.length).toBeGreaterThan(20);
    const above = sc.layout.lanes[0];
    const below = sc.layout.lanes[1];
    for (const r of bins) {
      expect(r.w).toBe(BIN - 0.5);
      expect(r.y).toBeGreaterThanOrEqual(above.queueTop + above.queueH + 4 - 1e-3);
      expect(r.y + r.h).toBeLessThanOrEqual(below.batchTop - 4 + 1e-3);
    }
    // The tallest bin fills the corridor; its count is what the gutter label shows.
    expect(stats.corridorMax[1]).toBeGreaterThan(0);
  });
});

describe('selection layer', () => {
  it("outlines the selected request's boxes and thickens its arrows", () => {
    const ctx = new RecordingContext();
    const path = r1();
    const stats = drawSelection(ctx, frame({ path }));
    // r1 is in A1, B5 and A2 (not A3), and has two handoffs.
    expect(stats).toEqual({ highlightedBoxes: 3, highlightedArrows: 2 });
    const outlines = ctx.withState('strokeRect').map(({ op, s }) => [op[1], op[2], s.strokeStyle, s.lineWidth]);
    expect(outlines).toEqual([
      [x(0) + 1, A.batchTop + 1, THEME.select, 2],
      [x(20) + 1, B.batchTop + 1, THEME.select, 2],
      [x(50) + 1, A.batchTop + 1, THEME.select, 2],
    ]);
    // A box shorter than 3 px is drawn 3 px wide so that it stays visible.
    expect(ctx.rects()).toContainEqual({ x: x(50), y: A.batchTop, w: 3, h: A.batchH, color: THEME.phase.decode, alpha: 1 });
    const arrows = ctx.withState('stroke').map(({ s, dash }) => [s.strokeStyle, s.lineWidth, dash]);
    expect(arrows).toEqual([
      [THEME.discarded, 2.5, [6, 4]],
      [THEME.kept, 2.5, []],
    ]);
  });
  it('frames the clicked batch with a dashed outline', () => {
    const ctx = new RecordingContext();
    drawSelection(ctx, frame({ selectedBatch: absOf('B', 5) }));
    const [frameRect] = ctx.withState('strokeRect');
    expect(frameRect.op).toEqual(['strokeRect', x(20) - 2, B.batchTop - 3, x(40) - x(20) + 4, B.batchH + 6]);
    expect(frameRect.dash).toEqual([3, 2]);
    expect(frameRect.s.strokeStyle).toBe(THEME.config);
  });
});

describe('config marks layer', () => {
  it('draws a dashed vertical mark with its text at each config change', () => {
    const ctx = new RecordingContext();
    expect(drawConfigMarks(ctx, frame())).toBe(2);
    const lines = ctx.withState('stroke').map(({ s, dash }) => [s.strokeStyle, dash]);
    expect(lines).toEqual([
      [THEME.config, [5, 4]],
      [THEME.config, [5, 4]],
    ]);
    expect(ctx.calls('moveTo')).toEqual([
      ['moveTo', x(0) + 0.5, layout.axisH],
      ['moveTo', x(70) + 0.5, layout.axisH],
    ]);
    expect(ctx.texts().map((t) => [t.text, t.x, t.color])).toEqual([
      ['config: async · T A=1 B=4', x(0) + 0.5 + 8, THEME.config],
      ['config changed: sync · T A=2 B=4', x(70) + 0.5 + 8, THEME.config],
    ]);
  });
  it('cuts a label short of the next mark', () => {
    const ctx = new RecordingContext();
    // 0..500 ms: the marks are 140 px apart, the first label (150 px at full length) gets 140 − 0.5 − 18.
    drawConfigMarks(ctx, frame({}, { ...v, t1: 500 }));
    const first = ctx.texts()[0].text;
    expect(first).toBe('config: async · T A…');
    expect(first.length * CHAR_W).toBeLessThanOrEqual(140 - 0.5 - 18);
  });
});

describe('overlays layer', () => {
  it('shades a range dragged right to left between its edges, and draws the now line', () => {
    const ctx = new RecordingContext();
    drawOverlays(ctx, frame({ range: [60, 20], liveNow: 80 }));
    const h = 500 - layout.axisH;
    expect(ctx.rects()).toEqual([
      { x: x(20), y: layout.axisH, w: 400, h, color: THEME.range, alpha: 1 },
      { x: x(20), y: layout.axisH, w: 1, h, color: THEME.rangeEdge, alpha: 1 },
      { x: x(60), y: layout.axisH, w: 1, h, color: THEME.rangeEdge, alpha: 1 },
    ]);
    expect(ctx.withState('stroke').map(({ s }) => s.strokeStyle)).toEqual([THEME.now]);
    expect(ctx.calls('moveTo')).toEqual([['moveTo', x(80) + 0.5, layout.axisH]]);
  });
});

describe('lane labels layer', () => {
  it('names each lane in the gutter with the threshold in force, the queue maximum and the gauges', () => {
    const ctx = new RecordingContext();
    const gauges = new Map([['B', { running: 3, waiting: 1, pendingReturn: 2, kvBytes: 2048 }]]);
    drawLaneLabels(ctx, frame({ gauges }), [6, 1], [0, 17]);
    const texts = ctx.texts();
    expect(texts.filter((t) => t.x < X0).length).toBe(texts.length);
    expect(texts).toContainEqual({
      text: 'A',
      x: 26,
      y: A.batchTop + 9,
      color: THEME.text,
      font: '600 13px system-ui, -apple-system, Segoe UI, sans-serif',
      align: 'left',
    });
    // The view ends at 100 ms, after the change at 70 ms: A's threshold is 2 there.
    expect(texts.map((t) => t.text)).toEqual([
      'A',
      'batches · threshold 2',
      'queue (max 6)',
      'B',
      'batches · threshold 4',
      'queue (max 1) · KV 2.0 KiB',
      'handoffs / 0.30 ms',
      '(max 17)',
      'run 3 · wait 1 · at peer 2',
    ]);
    // The gutter is repainted so that nothing from the plot shows under the labels.
    expect(ctx.rects()[0]).toEqual({ x: 0, y: A.top, w: X0 - 1, h: A.bottom - A.top, color: THEME.laneA, alpha: 1 });
  });
});

describe('gutter under a lane: gauges and the corridor caption', () => {
  const short = computeLayout(['A', 'B', 'C'], X0 + 1000 + 12, 3 * 150 + 38);
  const lines = (h: number) => {
    const l = computeLayout(['A', 'B', 'C'], X0 + 1000 + 12, h);
    const ctx = new RecordingContext();
    const gauges = new Map(['A', 'B', 'C'].map((m) => [m, { running: 3, waiting: 1, pendingReturn: 2, kvBytes: 2048 }]));
    drawLaneLabels(
      ctx,
      makeFrame(store, l, { ...v, x0: l.plotX0, width: l.plotWidth }, { ...base, gauges }, () => new RecordingPath()),
      [1, 1, 1],
      [0, 5, 9],
    );
    return { l, texts: ctx.texts().filter((t) => t.font.startsWith('11px')) };
  };
  it.each([150 * 3 + 38, 110 * 3 + 38, 240 * 3 + 38])('at %i px no two lines of the gutter overlap, and each stays above the next lane', (h) => {
    const { l, texts } = lines(h);
    const ys = texts.map((t) => t.y).sort((a, b) => a - b);
    for (let k = 1; k < ys.length; k++) expect(ys[k] - ys[k - 1]).toBeGreaterThanOrEqual(LINE_H);
    // the medium lane (B): its gauges, then the caption of the corridor to C, all between its queue and C's batches
    const under = texts.filter((t) => t.y > l.lanes[1].queueTop + l.lanes[1].queueH && t.y < l.lanes[2].batchTop);
    expect(under.some((t) => t.text.startsWith('run 3'))).toBe(true);
    expect(under.some((t) => t.text.includes('(max 9)') || t.text.includes('≤ 9 /'))).toBe(true);
  });
  it('keeps two lines each while they fit, else joins the caption, then the gauges', () => {
    expect(short.lanes[1].bottom - short.lanes[1].top).toBe(150);
    const c = { lines: ['c1', 'c2'], short: 'c' };
    expect(stackGutter(['g1', 'g2'], c, 4 * LINE_H + 4).map((x) => x.text)).toEqual(['g1', 'g2', 'c1', 'c2']);
    expect(stackGutter(['g1', 'g2'], c, 4 * LINE_H + 3).map((x) => x.text)).toEqual(['g1', 'g2', 'c']);
    expect(stackGutter(['g1', 'g2'], c, 3 * LINE_H + 3).map((x) => x.text)).toEqual(['g1 · g2', 'c']);
    expect(stackGutter(['g1', 'g2'], null, 2 * LINE_H + 4).map((x) => x.text)).toEqual(['g1', 'g2']);
  });
});

describe('tooltip layer', () => {
  it('describes the hovered batch, kept inside the canvas', () => {
    const ctx = new RecordingContext();
    const p = store.batches.physOfAbs(absOf('A', 1));
    drawTooltip(ctx, frame({ hover: { x: layout.width - 5, y: 100, batch: p } }));
    expect(ctx.texts().map((t) => t.text)).toEqual(['A · batch 1', 'prefill · 2 requests · 40 tokens fed', '10.00 ms long']);
    const [box] = ctx.rects();
    expect(box.x + box.w).toBe(layout.width - 4);
    expect(box.y).toBe(114);
  });
  it('draws nothing without a hovered batch', () => {
    const ctx = new RecordingContext();
    drawTooltip(ctx, frame({ hover: { x: 10, y: 10, batch: -1 } }));
    expect(ctx.ops).toEqual([]);
  });
});
