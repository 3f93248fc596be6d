// Text fitting and number formats of the canvas labels.
import type { Paint2D } from './canvas.ts';

/** `s` cut with an ellipsis to fit `max` px in the context's current font. */
export function ellipsize(ctx: Paint2D, s: string, max: number): string {
  if (ctx.measureText(s).width <= max) return s;
  let t = s;
  while (t.length > 1 && ctx.measureText(`${t}…`).width > max) t = t.slice(0, -1);
  return `${t}…`;
}

/** A model name short enough for a config mark. */
export const short = (m: string): string => (m.length > 14 ? `${m.slice(0, 13)}…` : m);

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}
