// Paint layer: what lies over the plot, the shift-drag time range and the live feed's "now" line.
import { timeToX } from '../viewport.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { THEME } from './theme.ts';

export function drawOverlays(ctx: Paint2D, f: Frame): void {
  const { layout, v, o, height } = f;
  if (o.range) {
    // The range may have been dragged right to left.
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
}
