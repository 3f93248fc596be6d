// Paint layer: the hover tooltip of a batch (model, id, phase, size, tokens, grammar-masked rows, duration), kept inside the canvas.
import { PHASE_NAMES } from '../eventStore.ts';
import { formatMs } from '../viewport.ts';
import type { Paint2D } from './canvas.ts';
import type { Frame } from './frame.ts';
import { THEME } from './theme.ts';
import { plural } from '../../plural.ts';

/** Draws the tooltip of the hovered batch (a physical index), if any. */
export function drawTooltip(ctx: Paint2D, f: Frame): void {
  const hover = f.o.hover;
  if (!hover || hover.batch < 0) return;
  const { store, layout } = f;
  const c = store.batches.cols;
  const p = hover.batch;
  const lines = [
    `${store.lanes[c.lane[p]]} · batch ${c.batchId[p]}`,
    `${PHASE_NAMES[c.phase[p]]} · ${plural(c.size[p], 'request')} · ${plural(c.tokens[p], 'token')} fed`,
    ...(c.masked[p] > 0 ? [`grammar-masked: ${c.masked[p]} of ${plural(c.size[p], 'row')}`] : []),
    `${formatMs(c.end[p] - c.start[p], 0.01)} long${c.steps[p] > 1 ? ` · ${c.steps[p]} passes (lookahead)` : ''}`,
  ];
  ctx.font = '12px system-ui, -apple-system, Segoe UI, sans-serif';
  const w = Math.max(...lines.map((s) => ctx.measureText(s).width)) + 16;
  const hgt = lines.length * 17 + 10;
  // Below-right of the pointer, pushed back in near the right and bottom edges.
  const bx = Math.min(layout.width - w - 4, hover.x + 14);
  const by = Math.min(layout.height - hgt - 4, hover.y + 14);
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
