// Paint layer: each lane's waiting-queue strip, a step area of the longest queue seen in every pixel column.
import { timeToX } from '../viewport.ts';
import { pointRange } from '../windowRange.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { RectBatch } from './rectBatch.ts';
import { THEME } from './theme.ts';

export interface QueueStats {
  queueEvents: number;
  /** Longest queue per lane in view: the strip's scale, and the number its label shows. */
  queueMax: number[];
}

/** Per (lane, pixel column) the longest queue, -1 for no data; kept across frames (it only grows). */
let queueCols = new Float32Array(0);
const rects = new RectBatch();

export function drawQueues(ctx: Paint2D, f: Frame): QueueStats {
  const queueEvents = fillQueueColumns(f);
  const { W, plotL, plotR } = f;
  const queueMax: number[] = [];
  for (const l of f.layout.lanes) {
    const base = l.lane * W;
    let max = 0;
    for (let c = 0; c < W; c++) if (queueCols[base + c] > max) max = queueCols[base + c];
    // A floor on the scale keeps a queue of 1 from filling the whole strip.
    const scale = Math.max(4, max);
    queueMax.push(max);
    const bottom = l.queueTop + l.queueH;
    let c = 0;
    while (c < W) {
      const val = queueCols[base + c];
      let e = c + 1;
      while (e < W && queueCols[base + e] === val) e++;
      if (val > 0) {
        const h = Math.max(1, (val / scale) * l.queueH);
        rects.add(plotL + c, bottom - h, e - c, h);
      }
      c = e;
    }
    rects.fill(ctx, THEME.queue);
    ctx.fillStyle = THEME.grid;
    ctx.fillRect(plotL, bottom, plotR - plotL, 1);
  }
  return { queueEvents, queueMax };
}

/** Fills queueCols from the queue events in view; returns how many there were. */
function fillQueueColumns(f: Frame): number {
  const { store, v, W, nl, plotL } = f;
  if (queueCols.length < W * nl) queueCols = new Float32Array(W * nl);
  queueCols.fill(-1, 0, W * nl);
  const q = store.queues;
  const [q0, q1] = pointRange(store, q, v.t0, v.t1);
  const lastX = new Array<number>(nl).fill(-1);
  const lastV = new Array<number>(nl).fill(0);
  // Value in force at the left edge: the last event of each lane before the view (the search is bounded
  // because a lane that has been silent that long has nothing worth drawing).
  let need = nl;
  const seen = new Array<boolean>(nl).fill(false);
  for (let i = q0 - 1; i >= 0 && need > 0 && i > q0 - 50_000; i--) {
    const p = q.phys(i);
    const lane = q.cols.lane[p];
    if (lane < nl && !seen[lane] && q.cols.t[p] < v.t0) {
      seen[lane] = true;
      lastV[lane] = q.cols.length[p];
      lastX[lane] = 0;
      need--;
    }
  }
  let events = 0;
  for (let i = q0; i < q1; i++) {
    const p = q.phys(i);
    const t = q.cols.t[p];
    if (t > v.t1) continue;
    const lane = q.cols.lane[p];
    if (lane >= nl) continue;
    events++;
    const x = Math.max(0, Math.min(W - 1, Math.floor(timeToX(v, t) - plotL)));
    const base = lane * W;
    // A queue length holds until the next event: carry it over the columns in between.
    if (lastX[lane] >= 0) for (let c = lastX[lane]; c < x; c++) if (queueCols[base + c] < lastV[lane]) queueCols[base + c] = lastV[lane];
    const val = q.cols.length[p];
    if (queueCols[base + x] < val) queueCols[base + x] = val;
    lastX[lane] = x;
    lastV[lane] = val;
  }
  // The last value holds to the plot's edge, or on a live feed only up to "now" (the future is unknown).
  const liveEdge = f.o.liveNow === null ? W : Math.max(0, Math.min(W, Math.floor(timeToX(v, f.o.liveNow) - plotL)));
  for (let lane = 0; lane < nl; lane++) {
    if (lastX[lane] < 0) continue;
    const base = lane * W;
    for (let c = lastX[lane]; c < liveEdge; c++) if (queueCols[base + c] < lastV[lane]) queueCols[base + c] = lastV[lane];
  }
  return events;
}
