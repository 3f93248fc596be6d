// Paint layer: the gutter left of the plot, with each lane's name, threshold, queue maximum and live gauges, and the corridor captions.
import { formatMs } from '../viewport.ts';
import { modelColor } from '../modelColors.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { BIN } from './handoffs.ts';
import { ellipsize, formatBytes } from './text.ts';
import { THEME } from './theme.ts';

/** One 11 px line of the gutter: 14 px apart, as the gauges always were. */
export const LINE_H = 14;
const SMALL = '11px system-ui, -apple-system, Segoe UI, sans-serif';

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
    ctx.font = SMALL;
    ctx.fillStyle = THEME.muted;
    const th = cf?.thresholds[l.model];
    ctx.fillText(th === undefined ? 'batches' : `batches · threshold ${th}`, 12, l.batchTop + 26);
    // the lane's KV sits on its queue line: under the strip the gauges then take one line beside the corridor caption
    const kv = o.gauges.get(l.model);
    ctx.fillText(`queue (max ${queueMax[l.lane] ?? 0})${kv ? ` · KV ${formatBytes(kv.kvBytes)}` : ''}`, 12, l.queueTop + l.queueH / 2);
  }
  // Under each lane's queue strip: its gauges, then the caption of the corridor down to the next lane,
  // stacked so that they never share a line however short the lanes are.
  ctx.font = SMALL;
  for (const l of layout.lanes) {
    const next = layout.lanes[l.lane + 1];
    const g = o.gauges.get(l.model);
    const max = next ? corridorMax[next.lane] : 0;
    const gauges = g ? [`run ${g.running} · wait ${g.waiting} · at peer ${g.pendingReturn}`] : [];
    const bin = max ? formatMs((BIN * (v.t1 - v.t0)) / v.width, 0.01) : '';
    const caption = max ? { lines: [`handoffs / ${bin}`, `(max ${max})`], short: `handoffs ≤ ${max} / ${bin}` } : null;
    const top = l.queueTop + l.queueH;
    const room = (next ? next.batchTop : l.bottom) - top;
    const lines = stackGutter(gauges, caption, room);
    // the corridor caption sits in the middle of the room the gauges leave, as it did alone
    const free = room - lines.length * LINE_H;
    lines.forEach((line, k) => {
      ctx.fillStyle = line.gauge && k === 0 ? THEME.text : THEME.muted;
      const y = top + LINE_H / 2 + 3 + k * LINE_H + (line.gauge ? 0 : Math.max(0, free / 2 - 3));
      ctx.fillText(ellipsize(ctx, line.text, plotL - 14), 12, y);
    });
  }
}

/**
 * The gauge lines, then the caption lines, in `room` px: every line while they fit, else the
 * caption's short form and then the gauges joined on one line.
 */
export function stackGutter(
  gauges: readonly string[],
  caption: { lines: readonly string[]; short: string } | null,
  room: number,
): { text: string; gauge: boolean }[] {
  const fits = (n: number) => n * LINE_H + 4 <= room;
  let g = [...gauges];
  let c = caption ? [...caption.lines] : [];
  if (caption && !fits(g.length + c.length)) c = [caption.short];
  if (g.length > 1 && !fits(g.length + c.length)) g = [g.join(' · ')];
  return [...g.map((text) => ({ text, gauge: true })), ...c.map((text) => ({ text, gauge: false }))];
}
