// Paint layer: the canvas background and the alternating lane bands, under everything else.
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { THEME } from './theme.ts';

export function drawLaneBands(ctx: Paint2D, f: Frame): void {
  ctx.fillStyle = THEME.bg;
  ctx.fillRect(0, 0, f.width, f.height);
  for (const l of f.layout.lanes) {
    ctx.fillStyle = l.lane % 2 ? THEME.laneB : THEME.laneA;
    ctx.fillRect(0, l.top, f.width, l.bottom - l.top);
  }
}
