// Paint layer: batch boxes per phase colour (a strip along the bottom where a grammar masked rows), with pixel-column runs for batches too narrow to see and size labels on wide ones.
import { PHASE_NAMES } from '../eventStore.ts';
import { timeToX } from '../viewport.ts';
import { batchRange } from '../windowRange.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { RectBatch } from './rectBatch.ts';
import { THEME } from './theme.ts';

export interface BatchStats {
  visibleBatches: number;
  batchBoxes: number;
  columnRuns: number;
}

/** Phase index -> priority: prefill > extend > decode when a pixel column holds several phases. */
const PRIORITY = [3, 2, 1];
const BY_PRIORITY = [null, 'decode', 'extend', 'prefill'] as const;
const phaseRects = [new RectBatch(), new RectBatch(), new RectBatch()];
const colRects = [new RectBatch(), new RectBatch(), new RectBatch(), new RectBatch()];
const maskedRects = new RectBatch();
/** Height of the grammar-masked strip, px. */
const MASK_STRIP = 3;
/** Per (lane, pixel column) the highest-priority phase of a narrow batch there, 0 for none; kept across frames. */
let columns = new Uint8Array(0);

/** Labels stop at this many: past it the view is too crowded to read them anyway. */
const MAX_LABELS = 600;

export function drawBatches(ctx: Paint2D, f: Frame): BatchStats {
  const { store, layout, v, W, nl, plotL, plotR } = f;
  if (columns.length < W * nl) columns = new Uint8Array(W * nl);
  columns.fill(0, 0, W * nl);
  const b = store.batches;
  const c = b.cols;
  const [i0, i1] = batchRange(store, v.t0, v.t1);
  const labels: { x: number; y: number; text: string }[] = [];
  const stats: BatchStats = { visibleBatches: 0, batchBoxes: 0, columnRuns: 0 };
  for (let i = i0; i < i1; i++) {
    const p = b.phys(i);
    const s = c.start[p];
    const e = c.end[p];
    if (e < v.t0 || s > v.t1) continue;
    const lane = c.lane[p];
    const l = layout.lanes[lane];
    if (!l) continue;
    stats.visibleBatches++;
    const x0 = timeToX(v, s);
    const x1 = timeToX(v, e);
    if (x1 - x0 >= 2) {
      const xa = Math.max(plotL - 2, x0);
      const xb = Math.min(plotR + 2, x1);
      // A one-pixel gap between neighbours keeps back-to-back batches readable as separate boxes.
      const w = Math.max(1, xb - xa - (x1 - x0 > 5 ? 1 : 0));
      phaseRects[c.phase[p]].add(xa, l.batchTop, w, l.batchH);
      if (c.masked[p] > 0) maskedRects.add(xa, l.batchTop + l.batchH - MASK_STRIP, w, MASK_STRIP);
      stats.batchBoxes++;
      if (xb - xa >= 18 && labels.length < MAX_LABELS) labels.push({ x: (xa + xb) / 2, y: l.batchTop + l.batchH / 2, text: String(c.size[p]) });
    } else {
      const pr = PRIORITY[c.phase[p]];
      const base = lane * W;
      const ca = Math.max(0, Math.floor(x0 - plotL));
      const cb = Math.min(W - 1, Math.floor(x1 - plotL));
      for (let k = ca; k <= cb; k++) if (columns[base + k] < pr) columns[base + k] = pr;
    }
  }
  ctx.globalAlpha = f.dim ? 0.32 : 1;
  PHASE_NAMES.forEach((ph, k) => phaseRects[k].fill(ctx, THEME.phase[ph]));
  if (maskedRects.n) maskedRects.fill(ctx, THEME.masked);
  stats.columnRuns = drawColumnRuns(ctx, f);
  ctx.globalAlpha = 1;
  if (labels.length) {
    ctx.font = '600 11px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillStyle = f.dim ? 'rgba(10,14,20,0.5)' : '#0a0e14';
    for (const lb of labels) ctx.fillText(lb.text, lb.x, lb.y + 0.5);
  }
  return stats;
}

/** Adjacent columns of the same phase merge into one rectangle: a zoomed-out lane is a few hundred fills, not thousands. */
function drawColumnRuns(ctx: Paint2D, f: Frame): number {
  const { W, plotL } = f;
  let runs = 0;
  for (const l of f.layout.lanes) {
    const base = l.lane * W;
    let k = 0;
    while (k < W) {
      const pr = columns[base + k];
      let e = k + 1;
      while (e < W && columns[base + e] === pr) e++;
      if (pr) {
        colRects[pr].add(plotL + k, l.batchTop, e - k, l.batchH);
        runs++;
      }
      k = e;
    }
  }
  for (let pr = 1; pr <= 3; pr++) colRects[pr].fill(ctx, THEME.phase[BY_PRIORITY[pr]!]);
  return runs;
}
