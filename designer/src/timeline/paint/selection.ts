// Paint layer: the selected request's boxes and arrows redrawn bright over the dimmed rest, and the clicked batch's outline.
import { PHASE_NAMES } from '../eventStore.ts';
import { timeToX } from '../viewport.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { arrowHead, edgeY } from './handoffs.ts';
import { THEME } from './theme.ts';

export interface SelectionStats {
  highlightedBoxes: number;
  highlightedArrows: number;
}

export function drawSelection(ctx: Paint2D, f: Frame): SelectionStats {
  const stats: SelectionStats = { highlightedBoxes: 0, highlightedArrows: 0 };
  if (f.o.path) {
    stats.highlightedBoxes = drawPathBoxes(ctx, f, f.o.path.batches);
    stats.highlightedArrows = drawPathArrows(ctx, f, f.o.path.handoffs);
  }
  drawClickedBatch(ctx, f);
  return stats;
}

/** Boxes are at least 3 px wide so that a request's short decode steps stay visible when zoomed out. */
function drawPathBoxes(ctx: Paint2D, f: Frame, batches: readonly number[]): number {
  const { store, layout, v } = f;
  const b = store.batches;
  const c = b.cols;
  let n = 0;
  ctx.lineWidth = 2;
  ctx.strokeStyle = THEME.select;
  for (const a of batches) {
    const p = b.physOfAbs(a);
    if (p < 0 || c.end[p] < v.t0 || c.start[p] > v.t1) continue;
    const l = layout.lanes[c.lane[p]];
    const x0 = timeToX(v, c.start[p]);
    const w = Math.max(3, timeToX(v, c.end[p]) - x0);
    ctx.fillStyle = THEME.phase[PHASE_NAMES[c.phase[p]]];
    ctx.fillRect(x0, l.batchTop, w, l.batchH);
    ctx.strokeRect(x0 + 1, l.batchTop + 1, w - 2, l.batchH - 2);
    n++;
  }
  return n;
}

function drawPathArrows(ctx: Paint2D, f: Frame, handoffs: readonly number[]): number {
  const { store, layout, v, plotL, plotR } = f;
  const b = store.batches;
  const c = b.cols;
  const h = store.handoffs;
  let n = 0;
  for (const a of handoffs) {
    const p = h.physOfAbs(a);
    if (p < 0) continue;
    const sp = b.physOfAbs(h.cols.fromAbs[p]);
    const rp = b.physOfAbs(h.cols.toAbs[p]);
    if (rp < 0) continue;
    const fromLane = h.cols.from[p];
    const toLane = h.cols.to[p];
    const down = toLane > fromLane;
    const xs = timeToX(v, sp >= 0 ? c.end[sp] : h.cols.t[p]);
    const xr = timeToX(v, c.start[rp]);
    if (Math.max(xs, xr) < plotL || Math.min(xs, xr) > plotR) continue;
    const ys = edgeY(layout, fromLane, down, true);
    const yr = edgeY(layout, toLane, down, false);
    const kept = h.cols.kept[p] === 1;
    ctx.strokeStyle = kept ? THEME.kept : THEME.discarded;
    ctx.lineWidth = 2.5;
    ctx.setLineDash(kept ? [] : [6, 4]);
    ctx.beginPath();
    ctx.moveTo(xs, ys);
    ctx.lineTo(xr, yr);
    ctx.stroke();
    ctx.setLineDash([]);
    const hp = f.newPath();
    arrowHead(hp, xs, ys, xr, yr, 8);
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fill(hp);
    n++;
  }
  return n;
}

/** A dashed frame a little outside the box, so that it shows on a box that is also on the selected path. */
function drawClickedBatch(ctx: Paint2D, f: Frame): void {
  if (f.o.selectedBatch < 0) return;
  const { store, layout, v } = f;
  const c = store.batches.cols;
  const p = store.batches.physOfAbs(f.o.selectedBatch);
  if (p < 0) return;
  const l = layout.lanes[c.lane[p]];
  const x0 = timeToX(v, c.start[p]);
  const w = Math.max(3, timeToX(v, c.end[p]) - x0);
  ctx.setLineDash([3, 2]);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = THEME.config;
  ctx.strokeRect(x0 - 2, l.batchTop - 3, w + 4, l.batchH + 6);
  ctx.setLineDash([]);
}
