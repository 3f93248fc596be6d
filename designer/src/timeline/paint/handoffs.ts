// Paint layer: handoff arrows from the sending batch's end to the receiving batch's start, stubs for those in flight, and a histogram when dense.
import type { Layout } from '../layout.ts';
import { timeToX } from '../viewport.ts';
import { pointRange } from '../windowRange.ts';
import type { Paint2D, PathSink } from './canvas.ts';
import type { Frame } from './frame.ts';
import { RectBatch } from './rectBatch.ts';
import { THEME } from './theme.ts';

export interface HandoffStats {
  visibleHandoffs: number;
  arrows: number;
  keptArrows: number;
  discardedArrows: number;
  inFlight: number;
  /** Dense views: the tallest histogram bin per corridor (index = the lower lane), for its gutter label. */
  corridorMax: readonly number[];
}

/**
 * Past this many handoffs in view, thousands of slanted arrows read as a hatch (and rasterise slowly):
 * they become a histogram of handoffs per BIN px, discarded under kept, in the corridor above the lower lane.
 */
const DENSE = 1200;
export const BIN = 3;
/** Histogram counts per (lower lane, bin), kept across frames (they only grow). */
let binKept = new Float32Array(0);
let binDisc = new Float32Array(0);
const corridorMax: number[] = [];
const keptRects = new RectBatch();
const discRects = new RectBatch();

interface Paths {
  kept: PathSink;
  disc: PathSink;
  flight: PathSink;
  heads: [PathSink, PathSink];
}

export function drawHandoffs(ctx: Paint2D, f: Frame): HandoffStats {
  const { store, v, W, nl } = f;
  const h = store.handoffs;
  // Look back before the view: an arrow whose handoff happened left of it may still land inside.
  const margin = Math.max(60, (v.t1 - v.t0) * 0.25);
  const [h0, h1] = pointRange(store, h, v.t0 - margin, v.t1);
  let visibleHandoffs = 0;
  for (let i = h0; i < h1; i++) {
    const t = h.cols.t[h.phys(i)];
    if (t >= v.t0 && t <= v.t1) visibleHandoffs++;
  }
  const dense = h1 - h0 > DENSE;
  corridorMax.length = 0;
  const nb = Math.ceil(W / BIN);
  if (binKept.length < nb * nl) {
    binKept = new Float32Array(nb * nl);
    binDisc = new Float32Array(nb * nl);
  }
  if (dense) {
    binKept.fill(0, 0, nb * nl);
    binDisc.fill(0, 0, nb * nl);
  }
  const paths: Paths = { kept: f.newPath(), disc: f.newPath(), flight: f.newPath(), heads: [f.newPath(), f.newPath()] };
  const counts = collectHandoffs(f, h0, h1, dense, nb, paths);
  ctx.globalAlpha = f.dim ? 0.25 : dense ? 0.35 : 0.85;
  ctx.lineWidth = 1;
  if (dense) {
    ctx.globalAlpha = f.dim ? 0.25 : 0.8;
    drawHistogram(ctx, f, nb);
  } else {
    ctx.strokeStyle = THEME.kept;
    ctx.stroke(paths.kept);
    ctx.fillStyle = THEME.kept;
    ctx.fill(paths.heads[0]);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = THEME.discarded;
    ctx.stroke(paths.disc);
  }
  ctx.setLineDash([2, 3]);
  ctx.strokeStyle = THEME.inFlight;
  ctx.stroke(paths.flight);
  ctx.setLineDash([]);
  // Discarded heads go last (solid, over the dashed shafts).
  ctx.fillStyle = THEME.discarded;
  ctx.fill(paths.heads[1]);
  ctx.globalAlpha = 1;
  return { visibleHandoffs, ...counts, corridorMax };
}

/** Adds each handoff in [h0, h1) to its path (or, dense, to its bin); returns the counts for the stats. */
function collectHandoffs(f: Frame, h0: number, h1: number, dense: boolean, nb: number, paths: Paths): Omit<HandoffStats, 'visibleHandoffs' | 'corridorMax'> {
  const { store, layout, v, plotL, plotR } = f;
  const h = store.handoffs;
  const b = store.batches;
  const c = b.cols;
  const n = { arrows: 0, keptArrows: 0, discardedArrows: 0, inFlight: 0 };
  for (let i = h0; i < h1; i++) {
    const p = h.phys(i);
    const fromLane = h.cols.from[p];
    const toLane = h.cols.to[p];
    if (!layout.lanes[fromLane] || !layout.lanes[toLane]) continue;
    const sp = b.physOfAbs(h.cols.fromAbs[p]);
    const rp = b.physOfAbs(h.cols.toAbs[p]);
    const down = toLane > fromLane;
    const xs = timeToX(v, sp >= 0 ? c.end[sp] : h.cols.t[p]);
    const ys = edgeY(layout, fromLane, down, true);
    if (rp < 0) {
      if (h.cols.t[p] < v.t0 || h.cols.t[p] > v.t1) continue;
      n.inFlight++;
      // No receiving batch yet: a short stub half-way towards the receiver says where it is going.
      const yt = edgeY(layout, toLane, down, false);
      paths.flight.moveTo(xs, ys);
      paths.flight.lineTo(xs + 8, ys + (yt - ys) * 0.5);
      continue;
    }
    const xr = timeToX(v, c.start[rp]);
    if (Math.max(xs, xr) < plotL || Math.min(xs, xr) > plotR) continue;
    const yr = edgeY(layout, toLane, down, false);
    const kept = h.cols.kept[p] === 1;
    if (dense) {
      if (h.cols.t[p] < v.t0 || h.cols.t[p] > v.t1) continue;
      const bin = Math.floor((xs - plotL) / BIN);
      if (bin < 0 || bin >= nb) continue;
      const k = Math.max(fromLane, toLane) * nb + bin;
      if (kept) binKept[k]++;
      else binDisc[k]++;
    } else {
      const path = kept ? paths.kept : paths.disc;
      path.moveTo(xs, ys);
      path.lineTo(xr, yr);
    }
    n.arrows++;
    if (kept) n.keptArrows++;
    else n.discardedArrows++;
    if (!dense) arrowHead(paths.heads[kept ? 0 : 1], xs, ys, xr, yr, 5);
  }
  return n;
}

/** Each corridor scaled to its own tallest bin; corridors too thin to read are skipped. */
function drawHistogram(ctx: Paint2D, f: Frame, nb: number): void {
  const { layout, nl, plotL } = f;
  for (let lane = 1; lane < nl; lane++) {
    const above = layout.lanes[lane - 1];
    const yTop = above.queueTop + above.queueH + 4;
    const yBot = layout.lanes[lane].batchTop - 4;
    if (yBot - yTop < 8) continue;
    let max = 0;
    for (let bin = 0; bin < nb; bin++) max = Math.max(max, binKept[lane * nb + bin] + binDisc[lane * nb + bin]);
    corridorMax[lane] = max;
    if (!max) continue;
    const scale = (yBot - yTop) / max;
    for (let bin = 0; bin < nb; bin++) {
      const d = binDisc[lane * nb + bin] * scale;
      const kk = binKept[lane * nb + bin] * scale;
      const x = plotL + bin * BIN;
      if (d > 0) discRects.add(x, yBot - d, BIN - 0.5, d);
      if (kk > 0) keptRects.add(x, yBot - d - kk, BIN - 0.5, kk);
    }
  }
  discRects.fill(ctx, THEME.discarded);
  keptRects.fill(ctx, THEME.kept);
}

/** Where an arrow meets a lane: it leaves from the bottom edge when going down and arrives on the top edge (the reverse going up). */
export function edgeY(layout: Layout, lane: number, downward: boolean, outgoing: boolean): number {
  const l = layout.lanes[lane];
  return outgoing === downward ? l.batchTop + l.batchH : l.batchTop;
}

export function arrowHead(p: PathSink, x0: number, y0: number, x1: number, y1: number, size: number): void {
  const a = Math.atan2(y1 - y0, x1 - x0);
  p.moveTo(x1, y1);
  p.lineTo(x1 - size * Math.cos(a - 0.4), y1 - size * Math.sin(a - 0.4));
  p.lineTo(x1 - size * Math.cos(a + 0.4), y1 - size * Math.sin(a + 0.4));
  p.closePath();
}
