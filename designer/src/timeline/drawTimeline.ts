// Canvas painter of the timeline: lanes, batch boxes, queue strips, handoff arrows, selection and marks, with pixel-level LOD.
import { PHASE_NAMES, type EventStore } from './eventStore.ts';
import type { Layout } from './layout.ts';
import { modelColor } from './modelColors.ts';
import type { RequestPath } from './requestPath.ts';
import { formatMs, tickStep, timeToX, type Viewport } from './viewport.ts';
import { batchRange, pointRange } from './windowRange.ts';

export const THEME = {
  bg: '#0b0f15',
  laneA: '#10151d',
  laneB: '#0d1219',
  grid: '#1c2430',
  axis: '#141a23',
  text: '#d5dde7',
  muted: '#7d8896',
  phase: { prefill: '#f0a34b', extend: '#a98bfa', decode: '#4c9ff5' } as Record<string, string>,
  kept: '#3fb970',
  discarded: '#f4645d',
  inFlight: '#8b96a5',
  queue: 'rgba(125, 140, 160, 0.45)',
  queueLine: '#8c9bb0',
  config: '#e3b341',
  select: '#ffffff',
  range: 'rgba(88, 166, 255, 0.13)',
  rangeEdge: '#58a6ff',
  now: '#ff7b72',
} as const;

/** Live per-model gauges from the server's `stats` messages, drawn in the lane labels. */
export interface LaneGauge { running: number; waiting: number; pendingReturn: number; kvBytes: number; }

export interface DrawOptions {
  path: RequestPath | null;
  /** Absolute id of the clicked batch, -1 for none. */
  selectedBatch: number;
  range: [number, number] | null;
  hover: { x: number; y: number; batch: number } | null;
  /** Current time of a live feed (draws the "now" line), null for files. */
  liveNow: number | null;
  /** Axis labels are relative to this time. */
  origin: number;
  gauges: Map<string, LaneGauge>;
}

/** What the last frame drew: the test hook exposes it so e2e tests can compare with the events received. */
export interface DrawStats {
  lanes: string[];
  /** Batches overlapping the view (every one lands in a box or in a pixel-column run). */
  visibleBatches: number;
  /** Boxes drawn as individual rectangles (wide enough to see). */
  batchBoxes: number;
  /** Pixel-column runs standing for batches narrower than ~2 px. */
  columnRuns: number;
  visibleHandoffs: number;
  /** Handoffs with both batches known that were drawn: as arrows, or (dense views) counted into the histogram. */
  arrows: number;
  keptArrows: number;
  discardedArrows: number;
  /** Handoffs still waiting for their receiving batch (drawn as short stubs). */
  inFlight: number;
  highlightedBoxes: number;
  highlightedArrows: number;
  queueEvents: number;
  configMarks: number;
}

const PRIORITY = [3, 2, 1]; // prefill > extend > decode when a pixel column holds several phases

/**
 * Axis-aligned rectangles of one colour, filled with fillRect: software rasterisers take a fast path
 * for those, whereas one Path2D of thousands of sub-rectangles is filled as a general anti-aliased path.
 */
class RectBatch {
  private buf = new Float32Array(4096);
  n = 0;
  add(x: number, y: number, w: number, h: number): void {
    if (this.n * 4 + 4 > this.buf.length) { const b = new Float32Array(this.buf.length * 2); b.set(this.buf); this.buf = b; }
    const i = this.n++ * 4;
    this.buf[i] = x; this.buf[i + 1] = y; this.buf[i + 2] = w; this.buf[i + 3] = h;
  }
  fill(ctx: CanvasRenderingContext2D, color: string): void {
    ctx.fillStyle = color;
    const b = this.buf;
    for (let i = 0; i < this.n * 4; i += 4) ctx.fillRect(b[i], b[i + 1], b[i + 2], b[i + 3]);
    this.n = 0;
  }
}
const rects = { queue: new RectBatch(), phase: [new RectBatch(), new RectBatch(), new RectBatch()], cols: [new RectBatch(), new RectBatch(), new RectBatch(), new RectBatch()], kept: new RectBatch(), disc: new RectBatch() };

let columns = new Uint8Array(0);
/** Handoff histogram of dense views: counts per (lower lane, 3 px bin). */
const BIN = 3;
let binKept = new Float32Array(0);
let binDisc = new Float32Array(0);
const corridorMax: number[] = [];
let queueCols = new Float32Array(0);

export function drawTimeline(ctx: CanvasRenderingContext2D, store: EventStore, layout: Layout, v: Viewport, o: DrawOptions): DrawStats {
  const { width, height } = layout;
  const stats: DrawStats = {
    lanes: layout.lanes.map((l) => l.model), visibleBatches: 0, batchBoxes: 0, columnRuns: 0, visibleHandoffs: 0, arrows: 0,
    keptArrows: 0, discardedArrows: 0, inFlight: 0, highlightedBoxes: 0, highlightedArrows: 0, queueEvents: 0, configMarks: 0,
  };
  ctx.fillStyle = THEME.bg;
  ctx.fillRect(0, 0, width, height);
  const plotL = layout.plotX0;
  const plotR = plotL + layout.plotWidth;
  const W = Math.ceil(layout.plotWidth) + 2;
  const nl = layout.lanes.length;

  // Lane backgrounds.
  for (const l of layout.lanes) {
    ctx.fillStyle = l.lane % 2 ? THEME.laneB : THEME.laneA;
    ctx.fillRect(0, l.top, width, l.bottom - l.top);
  }

  // Grid and axis.
  const step = tickStep(v);
  ctx.fillStyle = THEME.axis;
  ctx.fillRect(0, 0, width, layout.axisH);
  ctx.strokeStyle = THEME.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.font = '11px ui-monospace, SFMono-Regular, Menlo, monospace';
  ctx.fillStyle = THEME.muted;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const first = Math.ceil((v.t0 - o.origin) / step) * step + o.origin;
  for (let t = first; t <= v.t1; t += step) {
    const x = Math.round(timeToX(v, t)) + 0.5;
    ctx.moveTo(x, layout.axisH - 6);
    ctx.lineTo(x, height);
    ctx.fillText(formatMs(t - o.origin, step), x + 4, layout.axisH / 2);
  }
  ctx.stroke();

  ctx.save();
  ctx.beginPath();
  ctx.rect(plotL, layout.axisH, plotR - plotL, height - layout.axisH);
  ctx.clip();

  // Queue strips: per pixel column the longest queue seen there, as a step area.
  if (queueCols.length < W * nl) queueCols = new Float32Array(W * nl);
  queueCols.fill(-1, 0, W * nl);
  const q = store.queues;
  const [q0, q1] = pointRange(store, q, v.t0, v.t1);
  const lastX = new Array<number>(nl).fill(-1);
  const lastV = new Array<number>(nl).fill(0);
  // Value in force at the left edge: the last event of each lane before the view.
  let need = nl;
  const seen = new Array<boolean>(nl).fill(false);
  for (let i = q0 - 1; i >= 0 && need > 0 && i > q0 - 50_000; i--) {
    const p = q.phys(i);
    const lane = q.cols.lane[p];
    if (lane < nl && !seen[lane] && q.cols.t[p] < v.t0) { seen[lane] = true; lastV[lane] = q.cols.length[p]; lastX[lane] = 0; need--; }
  }
  for (let i = q0; i < q1; i++) {
    const p = q.phys(i);
    const t = q.cols.t[p];
    if (t > v.t1) continue;
    const lane = q.cols.lane[p];
    if (lane >= nl) continue;
    stats.queueEvents++;
    const x = Math.max(0, Math.min(W - 1, Math.floor(timeToX(v, t) - plotL)));
    const base = lane * W;
    if (lastX[lane] >= 0) for (let c = lastX[lane]; c < x; c++) if (queueCols[base + c] < lastV[lane]) queueCols[base + c] = lastV[lane];
    const val = q.cols.length[p];
    if (queueCols[base + x] < val) queueCols[base + x] = val;
    lastX[lane] = x;
    lastV[lane] = val;
  }
  const liveEdge = o.liveNow === null ? W : Math.max(0, Math.min(W, Math.floor(timeToX(v, o.liveNow) - plotL)));
  for (let lane = 0; lane < nl; lane++) {
    if (lastX[lane] < 0) continue;
    const base = lane * W;
    for (let c = lastX[lane]; c < liveEdge; c++) if (queueCols[base + c] < lastV[lane]) queueCols[base + c] = lastV[lane];
  }
  const queueMax: number[] = [];
  for (const l of layout.lanes) {
    const base = l.lane * W;
    let max = 0;
    for (let c = 0; c < W; c++) if (queueCols[base + c] > max) max = queueCols[base + c];
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
        rects.queue.add(plotL + c, bottom - h, e - c, h);
      }
      c = e;
    }
    rects.queue.fill(ctx, THEME.queue);
    ctx.fillStyle = THEME.grid;
    ctx.fillRect(plotL, bottom, plotR - plotL, 1);
  }

  // Batch boxes. Wide ones are rectangles (batched per phase into one path), narrow ones mark pixel columns.
  if (columns.length < W * nl) columns = new Uint8Array(W * nl);
  columns.fill(0, 0, W * nl);
  const b = store.batches;
  const c = b.cols;
  const [i0, i1] = batchRange(store, v.t0, v.t1);
  const labels: { x: number; y: number; text: string }[] = [];
  const dim = o.path !== null;
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
      rects.phase[c.phase[p]].add(xa, l.batchTop, Math.max(1, xb - xa - (x1 - x0 > 5 ? 1 : 0)), l.batchH);
      stats.batchBoxes++;
      if (xb - xa >= 18 && labels.length < 600) labels.push({ x: (xa + xb) / 2, y: l.batchTop + l.batchH / 2, text: String(c.size[p]) });
    } else {
      const pr = PRIORITY[c.phase[p]];
      const base = lane * W;
      const ca = Math.max(0, Math.floor(x0 - plotL));
      const cb = Math.min(W - 1, Math.floor(x1 - plotL));
      for (let k = ca; k <= cb; k++) if (columns[base + k] < pr) columns[base + k] = pr;
    }
  }
  ctx.globalAlpha = dim ? 0.32 : 1;
  PHASE_NAMES.forEach((ph, k) => rects.phase[k].fill(ctx, THEME.phase[ph]));
  const byPriority = [null, 'decode', 'extend', 'prefill'] as const;
  for (const l of layout.lanes) {
    const base = l.lane * W;
    let k = 0;
    while (k < W) {
      const pr = columns[base + k];
      let e = k + 1;
      while (e < W && columns[base + e] === pr) e++;
      if (pr) { rects.cols[pr].add(plotL + k, l.batchTop, e - k, l.batchH); stats.columnRuns++; }
      k = e;
    }
  }
  for (let pr = 1; pr <= 3; pr++) rects.cols[pr].fill(ctx, THEME.phase[byPriority[pr]!]);
  ctx.globalAlpha = 1;
  if (labels.length) {
    ctx.font = '600 11px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillStyle = dim ? 'rgba(10,14,20,0.5)' : '#0a0e14';
    for (const lb of labels) ctx.fillText(lb.text, lb.x, lb.y + 0.5);
  }

  // Handoff arrows: from the sending batch's end to the receiving batch's start.
  const h = store.handoffs;
  const margin = Math.max(60, (v.t1 - v.t0) * 0.25);
  const [h0, h1] = pointRange(store, h, v.t0 - margin, v.t1);
  stats.visibleHandoffs = 0;
  for (let i = h0; i < h1; i++) { const t = h.cols.t[h.phys(i)]; if (t >= v.t0 && t <= v.t1) stats.visibleHandoffs++; }
  // Dense views: thousands of slanted arrows read as a hatch (and rasterise slowly). They become a
  // histogram instead: handoffs per 3 px bin, discarded under kept, in the corridor above the lower lane.
  const dense = h1 - h0 > 1200;
  corridorMax.length = 0;
  const heads = !dense;
  const nb = Math.ceil(W / BIN);
  if (binKept.length < nb * nl) { binKept = new Float32Array(nb * nl); binDisc = new Float32Array(nb * nl); }
  if (dense) { binKept.fill(0, 0, nb * nl); binDisc.fill(0, 0, nb * nl); }
  const keptPath = new Path2D();
  const discPath = new Path2D();
  const flightPath = new Path2D();
  const headPaths = [new Path2D(), new Path2D()];
  const edgeY = (lane: number, downward: boolean, outgoing: boolean): number => {
    const l = layout.lanes[lane];
    // Leave from the bottom edge when going down, arrive on the top edge (and the reverse going up).
    return outgoing === downward ? l.batchTop + l.batchH : l.batchTop;
  };
  for (let i = h0; i < h1; i++) {
    const p = h.phys(i);
    const fromLane = h.cols.from[p];
    const toLane = h.cols.to[p];
    if (!layout.lanes[fromLane] || !layout.lanes[toLane]) continue;
    const sp = b.physOfAbs(h.cols.fromAbs[p]);
    const rp = b.physOfAbs(h.cols.toAbs[p]);
    const down = toLane > fromLane;
    const xs = timeToX(v, sp >= 0 ? c.end[sp] : h.cols.t[p]);
    const ys = edgeY(fromLane, down, true);
    if (rp < 0) {
      if (h.cols.t[p] < v.t0 || h.cols.t[p] > v.t1) continue;
      stats.inFlight++;
      const yt = edgeY(toLane, down, false);
      flightPath.moveTo(xs, ys);
      flightPath.lineTo(xs + 8, ys + (yt - ys) * 0.5);
      continue;
    }
    const xr = timeToX(v, c.start[rp]);
    if (Math.max(xs, xr) < plotL || Math.min(xs, xr) > plotR) continue;
    const yr = edgeY(toLane, down, false);
    const kept = h.cols.kept[p] === 1;
    if (dense) {
      if (h.cols.t[p] < v.t0 || h.cols.t[p] > v.t1) continue;
      const bin = Math.floor((xs - plotL) / BIN);
      if (bin < 0 || bin >= nb) continue;
      const k = Math.max(fromLane, toLane) * nb + bin;
      if (kept) binKept[k]++; else binDisc[k]++;
    } else {
      const path = kept ? keptPath : discPath;
      path.moveTo(xs, ys);
      path.lineTo(xr, yr);
    }
    stats.arrows++;
    if (kept) stats.keptArrows++; else stats.discardedArrows++;
    if (heads) arrowHead(headPaths[kept ? 0 : 1], xs, ys, xr, yr, 5);
  }
  ctx.globalAlpha = dim ? 0.25 : dense ? 0.35 : 0.85;
  ctx.lineWidth = 1;
  if (dense) {
    ctx.globalAlpha = dim ? 0.25 : 0.8;
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
        if (d > 0) rects.disc.add(x, yBot - d, BIN - 0.5, d);
        if (kk > 0) rects.kept.add(x, yBot - d - kk, BIN - 0.5, kk);
      }
    }
    rects.disc.fill(ctx, THEME.discarded);
    rects.kept.fill(ctx, THEME.kept);
  } else {
    ctx.strokeStyle = THEME.kept;
    ctx.stroke(keptPath);
    ctx.fillStyle = THEME.kept;
    ctx.fill(headPaths[0]);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = THEME.discarded;
    ctx.stroke(discPath);
  }
  ctx.setLineDash([2, 3]);
  ctx.strokeStyle = THEME.inFlight;
  ctx.stroke(flightPath);
  ctx.setLineDash([]);
  ctx.fillStyle = THEME.discarded;
  ctx.fill(headPaths[1]);
  ctx.globalAlpha = 1;

  // Selected request: its boxes outlined and its arrows thick, everything else dimmed above.
  if (o.path) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = THEME.select;
    for (const a of o.path.batches) {
      const p = b.physOfAbs(a);
      if (p < 0 || c.end[p] < v.t0 || c.start[p] > v.t1) continue;
      const l = layout.lanes[c.lane[p]];
      const x0 = timeToX(v, c.start[p]);
      const w = Math.max(3, timeToX(v, c.end[p]) - x0);
      ctx.fillStyle = THEME.phase[PHASE_NAMES[c.phase[p]]];
      ctx.fillRect(x0, l.batchTop, w, l.batchH);
      ctx.strokeRect(x0 + 1, l.batchTop + 1, w - 2, l.batchH - 2);
      stats.highlightedBoxes++;
    }
    for (const a of o.path.handoffs) {
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
      const ys = edgeY(fromLane, down, true);
      const yr = edgeY(toLane, down, false);
      const kept = h.cols.kept[p] === 1;
      ctx.strokeStyle = kept ? THEME.kept : THEME.discarded;
      ctx.lineWidth = 2.5;
      ctx.setLineDash(kept ? [] : [6, 4]);
      ctx.beginPath();
      ctx.moveTo(xs, ys);
      ctx.lineTo(xr, yr);
      ctx.stroke();
      ctx.setLineDash([]);
      const hp = new Path2D();
      arrowHead(hp, xs, ys, xr, yr, 8);
      ctx.fillStyle = ctx.strokeStyle;
      ctx.fill(hp);
      stats.highlightedArrows++;
    }
  }
  if (o.selectedBatch >= 0) {
    const p = b.physOfAbs(o.selectedBatch);
    if (p >= 0) {
      const l = layout.lanes[c.lane[p]];
      const x0 = timeToX(v, c.start[p]);
      const w = Math.max(3, timeToX(v, c.end[p]) - x0);
      ctx.setLineDash([3, 2]);
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = THEME.config;
      ctx.strokeRect(x0 - 2, l.batchTop - 3, w + 4, l.batchH + 6);
      ctx.setLineDash([]);
    }
  }

  // Config changes: a vertical mark with what changed.
  ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
  ctx.textAlign = 'left';
  for (let k = 0; k < store.configs.length; k++) {
    const cf = store.configs[k];
    if (cf.t < v.t0 || cf.t > v.t1) continue;
    stats.configMarks++;
    const x = Math.round(timeToX(v, cf.t)) + 0.5;
    ctx.strokeStyle = THEME.config;
    ctx.setLineDash([5, 4]);
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, layout.axisH);
    ctx.lineTo(x, height);
    ctx.stroke();
    ctx.setLineDash([]);
    // The label may run up to the next mark (or the plot's edge), never over it.
    const nextX = k + 1 < store.configs.length ? timeToX(v, store.configs[k + 1].t) : plotR;
    const room = Math.min(nextX, plotR) - x - 18;
    if (room < 30) continue;
    const full = `${k === 0 ? 'config' : 'config changed'}: ${cf.mode} · T ${Object.entries(cf.thresholds).map(([m, n]) => `${short(m)}=${n}`).join(' ')}`;
    const text = ellipsize(ctx, full, room);
    const tw = ctx.measureText(text).width;
    ctx.fillStyle = 'rgba(11,15,21,0.85)';
    ctx.fillRect(x + 3, layout.axisH + 3, tw + 10, 17);
    ctx.fillStyle = THEME.config;
    ctx.fillText(text, x + 8, layout.axisH + 12);
  }

  if (o.range) {
    const xa = timeToX(v, Math.min(o.range[0], o.range[1]));
    const xb = timeToX(v, Math.max(o.range[0], o.range[1]));
    ctx.fillStyle = THEME.range;
    ctx.fillRect(xa, layout.axisH, xb - xa, height - layout.axisH);
    ctx.fillStyle = THEME.rangeEdge;
    ctx.fillRect(Math.round(xa), layout.axisH, 1, height - layout.axisH);
    ctx.fillRect(Math.round(xb), layout.axisH, 1, height - layout.axisH);
  }
  if (o.liveNow !== null) {
    const x = Math.round(timeToX(v, o.liveNow)) + 0.5;
    ctx.strokeStyle = THEME.now;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, layout.axisH);
    ctx.lineTo(x, height);
    ctx.stroke();
  }
  ctx.restore();

  // Lane labels in the gutter (drawn last so that nothing from the plot covers them).
  for (const l of layout.lanes) {
    ctx.fillStyle = l.lane % 2 ? THEME.laneB : THEME.laneA;
    ctx.fillRect(0, l.top, plotL - 1, l.bottom - l.top);
    ctx.fillStyle = THEME.grid;
    ctx.fillRect(plotL - 1, l.top, 1, l.bottom - l.top);
    ctx.textAlign = 'left';
    ctx.fillStyle = THEME.text;
    ctx.font = '600 13px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.fillStyle = modelColor(l.lane);
    ctx.beginPath();
    ctx.arc(16, l.batchTop + 9, 4, 0, Math.PI * 2);
    ctx.fill();
    ctx.fillStyle = THEME.text;
    ctx.fillText(ellipsize(ctx, l.model, plotL - 40), 26, l.batchTop + 9);
    ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.fillStyle = THEME.muted;
    const cf = store.configAt(v.t1);
    const th = cf?.thresholds[l.model];
    ctx.fillText(th === undefined ? 'batches' : `batches · threshold ${th}`, 12, l.batchTop + 26);
    ctx.fillText(`queue (max ${queueMax[l.lane] ?? 0})`, 12, l.queueTop + l.queueH / 2);
    const g = o.gauges.get(l.model);
    if (g) {
      ctx.fillStyle = THEME.text;
      ctx.fillText(`run ${g.running} · wait ${g.waiting} · away ${g.pendingReturn}`, 12, l.queueTop + l.queueH + 10);
      ctx.fillStyle = THEME.muted;
      ctx.fillText(`KV ${formatBytes(g.kvBytes)}`, 12, l.queueTop + l.queueH + 24);
    }
  }
  for (let lane = 1; lane < nl; lane++) {
    if (!corridorMax[lane]) continue;
    const above = layout.lanes[lane - 1];
    const y = (above.queueTop + above.queueH + layout.lanes[lane].batchTop) / 2;
    ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.fillStyle = THEME.muted;
    ctx.fillText(`handoffs / ${formatMs(BIN * (v.t1 - v.t0) / v.width, 0.01)}`, 12, y - 6);
    ctx.fillText(`(max ${corridorMax[lane]})`, 12, y + 8);
  }
  ctx.fillStyle = THEME.axis;
  ctx.fillRect(0, 0, plotL - 1, layout.axisH);
  ctx.fillStyle = THEME.muted;
  ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
  ctx.textAlign = 'left';
  ctx.fillText(`time (+${formatMs(step)}/tick)`, 12, layout.axisH / 2);

  if (o.hover && o.hover.batch >= 0) drawTooltip(ctx, store, layout, o.hover.x, o.hover.y, o.hover.batch);
  return stats;
}

function arrowHead(p: Path2D, x0: number, y0: number, x1: number, y1: number, size: number): void {
  const a = Math.atan2(y1 - y0, x1 - x0);
  p.moveTo(x1, y1);
  p.lineTo(x1 - size * Math.cos(a - 0.4), y1 - size * Math.sin(a - 0.4));
  p.lineTo(x1 - size * Math.cos(a + 0.4), y1 - size * Math.sin(a + 0.4));
  p.closePath();
}

function drawTooltip(ctx: CanvasRenderingContext2D, store: EventStore, layout: Layout, x: number, y: number, p: number): void {
  const c = store.batches.cols;
  const lines = [
    `${store.lanes[c.lane[p]]} · batch ${c.batchId[p]}`,
    `${PHASE_NAMES[c.phase[p]]} · ${c.size[p]} requests · ${c.tokens[p]} tokens fed`,
    `${formatMs(c.end[p] - c.start[p], 0.01)} long${c.steps[p] > 1 ? ` · ${c.steps[p]} passes (lookahead)` : ''}`,
  ];
  ctx.font = '12px system-ui, -apple-system, Segoe UI, sans-serif';
  const w = Math.max(...lines.map((s) => ctx.measureText(s).width)) + 16;
  const hgt = lines.length * 17 + 10;
  const bx = Math.min(layout.width - w - 4, x + 14);
  const by = Math.min(layout.height - hgt - 4, y + 14);
  ctx.fillStyle = 'rgba(22,28,38,0.96)';
  ctx.strokeStyle = '#2f3a4a';
  ctx.lineWidth = 1;
  ctx.fillRect(bx, by, w, hgt);
  ctx.strokeRect(bx + 0.5, by + 0.5, w - 1, hgt - 1);
  ctx.textAlign = 'left';
  lines.forEach((s, i) => {
    ctx.fillStyle = i === 0 ? THEME.text : THEME.muted;
    ctx.fillText(s, bx + 8, by + 14 + i * 17);
  });
}

function ellipsize(ctx: CanvasRenderingContext2D, s: string, max: number): string {
  if (ctx.measureText(s).width <= max) return s;
  let t = s;
  while (t.length > 1 && ctx.measureText(`${t}…`).width > max) t = t.slice(0, -1);
  return `${t}…`;
}

const short = (m: string): string => (m.length > 14 ? `${m.slice(0, 13)}…` : m);

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}
