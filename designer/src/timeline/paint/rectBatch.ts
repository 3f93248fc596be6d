// Batched axis-aligned rectangles of one colour: the painter's fast path for thousands of boxes, bins and queue steps.
import type { Paint2D } from './canvas.ts';

/**
 * Filled with fillRect: software rasterisers take a fast path for those, whereas one Path2D of
 * thousands of sub-rectangles is filled as a general anti-aliased path. The buffer is kept across
 * frames (it only grows), so a frame allocates nothing here.
 */
export class RectBatch {
  private buf = new Float32Array(4096);
  n = 0;
  add(x: number, y: number, w: number, h: number): void {
    if (this.n * 4 + 4 > this.buf.length) {
      const b = new Float32Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    const i = this.n++ * 4;
    this.buf[i] = x;
    this.buf[i + 1] = y;
    this.buf[i + 2] = w;
    this.buf[i + 3] = h;
  }
  fill(ctx: Paint2D, color: string): void {
    ctx.fillStyle = color;
    const b = this.buf;
    for (let i = 0; i < this.n * 4; i += 4) ctx.fillRect(b[i], b[i + 1], b[i + 2], b[i + 3]);
    this.n = 0;
  }
}
