// The timeline's canvas in the page: sized to its parent at the device's pixel ratio, redrawn once per animation frame, with its input bound while attached.
export interface CanvasClient {
  /** One animation frame: draw if anything changed. */
  frame(ts: number): void;
  /** The canvas changed size: what was laid out for the old one is stale. */
  resized(): void;
  /** Binds pointer and key input; the answer unbinds it. */
  bindInput(canvas: HTMLCanvasElement): () => void;
}

export class TimelineCanvas {
  ctx: CanvasRenderingContext2D | null = null;
  /** The canvas size in CSS pixels, what layouts and hit tests use. */
  cssW = 0;
  cssH = 0;
  private canvas: HTMLCanvasElement | null = null;
  private raf = 0;
  private detachInput: (() => void) | null = null;
  private resizeObs: ResizeObserver | null = null;

  constructor(private readonly client: CanvasClient) {}

  attach(canvas: HTMLCanvasElement): void {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    const parent = canvas.parentElement!;
    this.resizeObs = new ResizeObserver(() => this.resize());
    this.resizeObs.observe(parent);
    this.resize();
    this.detachInput = this.client.bindInput(canvas);
    const loop = (ts: number): void => {
      this.raf = requestAnimationFrame(loop);
      this.client.frame(ts);
    };
    this.raf = requestAnimationFrame(loop);
  }

  detach(): void {
    cancelAnimationFrame(this.raf);
    this.resizeObs?.disconnect();
    this.detachInput?.();
    this.canvas = null;
    this.ctx = null;
  }

  private resize(): void {
    if (!this.canvas) return;
    const r = this.canvas.parentElement!.getBoundingClientRect();
    // past 2x the extra pixels cost fill time without a visible difference
    const dpr = Math.min(2, window.devicePixelRatio || 1);
    this.cssW = Math.max(200, Math.floor(r.width));
    this.cssH = Math.max(120, Math.floor(r.height));
    this.canvas.width = Math.floor(this.cssW * dpr);
    this.canvas.height = Math.floor(this.cssH * dpr);
    this.canvas.style.width = `${this.cssW}px`;
    this.canvas.style.height = `${this.cssH}px`;
    this.ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.client.resized();
  }
}
