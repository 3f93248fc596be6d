// Paint layer: a dashed vertical mark at each config change in view, labelled with the mode and thresholds.
import { timeToX } from '../viewport.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { ellipsize, short } from './text.ts';
import { THEME } from './theme.ts';

/** Returns how many marks were drawn. */
export function drawConfigMarks(ctx: Paint2D, f: Frame): number {
  const { store, layout, v, plotR } = f;
  let marks = 0;
  ctx.font = '11px system-ui, -apple-system, Segoe UI, sans-serif';
  ctx.textAlign = 'left';
  for (let k = 0; k < store.configs.length; k++) {
    const cf = store.configs[k];
    if (cf.t < v.t0 || cf.t > v.t1) continue;
    marks++;
    const x = Math.round(timeToX(v, cf.t)) + 0.5;
    ctx.strokeStyle = THEME.config;
    ctx.setLineDash([5, 4]);
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, layout.axisH);
    ctx.lineTo(x, f.height);
    ctx.stroke();
    ctx.setLineDash([]);
    // The label may run up to the next mark (or the plot's edge), never over it.
    const nextX = k + 1 < store.configs.length ? timeToX(v, store.configs[k + 1].t) : plotR;
    const room = Math.min(nextX, plotR) - x - 18;
    if (room < 30) continue;
    const full = `${k === 0 ? 'config' : 'config changed'}: ${cf.mode} · T ${Object.entries(cf.thresholds)
      .map(([m, n]) => `${short(m)}=${n}`)
      .join(' ')}`;
    const text = ellipsize(ctx, full, room);
    const tw = ctx.measureText(text).width;
    ctx.fillStyle = 'rgba(11,15,21,0.85)';
    ctx.fillRect(x + 3, layout.axisH + 3, tw + 10, 17);
    ctx.fillStyle = THEME.config;
    ctx.fillText(text, x + 8, layout.axisH + 12);
  }
  return marks;
}
