// Pointer, wheel and key input on the timeline canvas, turned into the controller's verbs (drag, range, hover, click, zoom).
import type { Layout } from './layout.ts';
import { xToTime, type Viewport } from './viewport.ts';

export interface CanvasInputTarget {
  layout(): Layout | null;
  viewport(): Viewport;
  /** A pan drag: the view it started from, moved by dx pixels. */
  drag(from: Viewport, dx: number): void;
  /** A range drag (shift, or on the axis): times under its two ends. */
  dragRange(a: number, b: number): void;
  /** The pointer over the plot (no button), or null when it left. */
  hover(p: { x: number; y: number } | null): void;
  click(x: number, y: number): void;
  clearRange(): void;
  pan(dx: number): void;
  zoom(factor: number, x?: number): void;
  escape(): void;
}

/** Listens on `canvas` (and Escape on the window); returns the function that stops listening. */
export function bindCanvasInput(canvas: HTMLCanvasElement, t: CanvasInputTarget): () => void {
  let down: { x: number; y: number; view: Viewport; mode: 'pan' | 'range'; moved: boolean } | null = null;
  const pos = (e: MouseEvent): { x: number; y: number } => {
    const r = canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  const onDown = (e: PointerEvent): void => {
    if (e.button !== 0) return;
    const p = pos(e);
    const layout = t.layout();
    const inAxis = layout ? p.y < layout.axisH : false;
    down = { ...p, view: t.viewport(), mode: e.shiftKey || inAxis ? 'range' : 'pan', moved: false };
    // Synthetic pointers (tests, some pens) may not be capturable; dragging still works without capture.
    try {
      canvas.setPointerCapture(e.pointerId);
    } catch {
      /* no capture */
    }
  };
  const onMove = (e: PointerEvent): void => {
    const p = pos(e);
    if (!down) return t.hover(p);
    if (Math.abs(p.x - down.x) + Math.abs(p.y - down.y) > 3) down.moved = true;
    if (!down.moved) return;
    if (down.mode === 'pan') t.drag(down.view, p.x - down.x);
    else t.dragRange(xToTime(down.view, down.x), xToTime(down.view, p.x));
    t.hover(null);
  };
  const onUp = (e: PointerEvent): void => {
    if (!down) return;
    const p = pos(e);
    if (!down.moved) {
      if (down.mode === 'range') t.clearRange();
      else t.click(p.x, p.y);
    }
    down = null;
  };
  const onLeave = (): void => t.hover(null);
  const onWheel = (e: WheelEvent): void => {
    e.preventDefault();
    const p = pos(e);
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) t.pan(-e.deltaX);
    else t.zoom(Math.exp(e.deltaY * 0.0015), p.x);
  };
  const onDbl = (e: MouseEvent): void => t.zoom(0.5, pos(e).x);
  const onKey = (e: KeyboardEvent): void => {
    if (e.key === 'Escape') t.escape();
  };
  const on: [EventTarget, string, EventListener, AddEventListenerOptions?][] = [
    [canvas, 'pointerdown', onDown as EventListener],
    [canvas, 'pointermove', onMove as EventListener],
    [canvas, 'pointerup', onUp as EventListener],
    [canvas, 'pointerleave', onLeave],
    [canvas, 'wheel', onWheel as EventListener, { passive: false }],
    [canvas, 'dblclick', onDbl as EventListener],
    [window, 'keydown', onKey as EventListener],
  ];
  for (const [target, type, fn, opts] of on) target.addEventListener(type, fn, opts);
  return () => {
    for (const [target, type, fn] of on) target.removeEventListener(type, fn);
  };
}
