// Paint layer: the time axis, its tick labels and the vertical grid lines through the lanes.
import { formatMs, timeToX } from '../viewport.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { THEME } from './theme.ts';

/** Ticks fall on multiples of the step counted from the origin, so labels read +0, +50 ms, ... whatever the pan. */
export function drawAxis(ctx: Paint2D, f: Frame): void {
  const { layout, v, o, step } = f;
  ctx.fillStyle = THEME.axis;
  ctx.fillRect(0, 0, f.width, layout.axisH);
  ctx.strokeStyle = THEME.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.font = '11px ui-monospace, SFMono-Regular, Menlo, monospace';
  ctx.fillStyle = THEME.muted;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const first = Math.ceil((v.t0 - o.origin) / step) * step + o.origin;
  for (let t = first; t <= v.t1; t += step) {
    // Half-pixel offset: a 1 px line on a pixel centre stays sharp instead of smearing over two columns.
    const x = Math.round(timeToX(v, t)) + 0.5;
    ctx.moveTo(x, layout.axisH - 6);
    ctx.lineTo(x, f.height);
    const label = formatMs(t - o.origin, step);
    // Right of its line, unless that runs past the canvas's edge: then left of it.
    if (x + 4 + ctx.measureText(label).width > f.width - 2) {
      ctx.textAlign = 'right';
      ctx.fillText(label, x - 4, layout.axisH / 2);
      ctx.textAlign = 'left';
    } else ctx.fillText(label, x + 4, layout.axisH / 2);
  }
  ctx.stroke();
}

/** The axis's caption in the gutter corner, painted after the lane labels have covered the gutter. */
export function drawAxisCaption(ctx: Paint2D, f: Frame): void {
  ctx.fillStyle = THEME.axis;
  ctx.fillRect(0, 0, f.plotL - 1, f.layout.axisH);
  ctx.fillStyle = THEME.muted;
  ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
  ctx.textAlign = 'left';
  ctx.fillText(`time (+${formatMs(f.step)}/tick)`, 12, f.layout.axisH / 2);
}
