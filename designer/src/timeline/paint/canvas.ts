// The slice of the 2D canvas API the timeline painter uses: the browser's context fits it, and so does a test's recording stand-in.

/** What a Path2D is used for here: arrow shafts and heads collected per colour, then stroked or filled at once. */
export interface PathSink {
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  closePath(): void;
}

/**
 * CanvasRenderingContext2D is assignable to this (styles are read back as `string | object` because a
 * context may hold a gradient), so the painter type-checks in the Node test project, which has no DOM types.
 */
export interface Paint2D {
  fillStyle: string | object;
  strokeStyle: string | object;
  lineWidth: number;
  font: string;
  textAlign: string;
  textBaseline: string;
  globalAlpha: number;
  fillRect(x: number, y: number, w: number, h: number): void;
  strokeRect(x: number, y: number, w: number, h: number): void;
  fillText(text: string, x: number, y: number): void;
  measureText(text: string): { width: number };
  beginPath(): void;
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  rect(x: number, y: number, w: number, h: number): void;
  arc(x: number, y: number, r: number, a0: number, a1: number): void;
  clip(): void;
  stroke(path?: PathSink): void;
  fill(path?: PathSink): void;
  setLineDash(segments: number[]): void;
  save(): void;
  restore(): void;
}

/** The page's Path2D, looked up when called so that a Node test can install a stand-in on globalThis first. */
export const browserPath = (): PathSink => new (globalThis as unknown as { Path2D: new () => PathSink }).Path2D();
