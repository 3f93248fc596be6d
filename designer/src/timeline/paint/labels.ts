// Paint layer: the gutter left of the plot, with each lane's name, threshold, queue maximum and live gauges, and the corridor captions.
import { formatMs } from '../viewport.ts';
import { modelColor } from '../modelColors.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { BIN } from './handoffs.ts';
import { ellipsize, formatBytes } from './text.ts';
import { THEME } from './theme.ts';

/**
 * Drawn after the plot (outside its clip) so that nothing from the plot covers the labels. The queue
 * and corridor maxima are what the queue and handoff layers found in this frame.
 */
export function drawLaneLabels(ctx: Paint2D, f: Frame, queueMax: readonly number[], corridorMax: readonly number[]): void {
  const { store, layout, v, o, plotL } = f;
  const cf = store.configAt(v.t1);
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
    const th = cf?.thresholds[l.model];
    ctx.fillText(th === undefined ? 'batches' : `batches · threshold ${th}`, 12, l.batchTop + 26);
    ctx.fillText(`queue (max ${queueMax[l.lane] ?? 0})`, 12, l.queueTop + l.queueH / 2);
    const g = o.gauges.get(l.model);
    if (g) {
      ctx.fillStyle = THEME.text;
      ctx.fillText(`run ${g.running} · wait ${g.waiting} · at peer ${g.pendingReturn}`, 12, l.queueTop + l.queueH + 10);
      ctx.fillStyle = THEME.muted;
      ctx.fillText(`KV ${formatBytes(g.kvBytes)}`, 12, l.queueTop + l.queueH + 24);
    }
  }
  for (let lane = 1; lane < f.nl; lane++) {
    if (!corridorMax[lane]) continue;
    const above = layout.lanes[lane - 1];
    const y = (above.queueTop + above.queueH + layout.lanes[lane].batchTop) / 2;
    ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
    ctx.fillStyle = THEME.muted;
    ctx.fillText(`handoffs / ${formatMs(BIN * (v.t1 - v.t0) / v.width, 0.01)}`, 12, y - 6);
    ctx.fillText(`(max ${corridorMax[lane]})`, 12, y + 8);
  }
}
