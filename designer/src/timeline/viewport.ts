// Time <-> pixel mapping of the plot area, and the pure zoom / pan / fit operations on it.

export interface Viewport {
  /** Visible time range (ms, runtime clock). */
  t0: number;
  t1: number;
  /** Plot area in CSS pixels. */
  x0: number;
  width: number;
}

export const MIN_SPAN_MS = 0.05;
export const MAX_SPAN_MS = 1e9;

export const timeToX = (v: Viewport, t: number): number => v.x0 + ((t - v.t0) * v.width) / (v.t1 - v.t0);
export const xToTime = (v: Viewport, x: number): number => v.t0 + ((x - v.x0) * (v.t1 - v.t0)) / v.width;
export const msPerPx = (v: Viewport): number => (v.t1 - v.t0) / v.width;

/** Zooms around the time under pixel x; factor > 1 zooms out. */
export function zoomAt(v: Viewport, x: number, factor: number): Viewport {
  const span = v.t1 - v.t0;
  const next = Math.min(MAX_SPAN_MS, Math.max(MIN_SPAN_MS, span * factor));
  const anchor = xToTime(v, x);
  const frac = (anchor - v.t0) / span;
  const t0 = anchor - frac * next;
  return { ...v, t0, t1: t0 + next };
}

/** Moves the view by dx pixels (dragging right shows earlier times). */
export function panBy(v: Viewport, dx: number): Viewport {
  const dt = dx * msPerPx(v);
  return { ...v, t0: v.t0 - dt, t1: v.t1 - dt };
}

/** A view ending at `end` with the same span (follow-live). */
export function endAt(v: Viewport, end: number): Viewport {
  const span = v.t1 - v.t0;
  return { ...v, t0: end - span, t1: end };
}

/** Fits [t0, t1] with a small margin. */
export function fit(v: Viewport, t0: number, t1: number): Viewport {
  const span = Math.max(MIN_SPAN_MS, t1 - t0);
  const pad = span * 0.02;
  return { ...v, t0: t0 - pad, t1: t0 + span + pad };
}

/** Tick step (1, 2 or 5 × 10^k ms) giving labels at least minPx apart. */
export function tickStep(v: Viewport, minPx = 90): number {
  const raw = msPerPx(v) * minPx;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** A time relative to the trace origin, signed: "+1.250 s", "−12 ms". */
export function formatRel(t: number, step = 1): string {
  return `${t < 0 ? '−' : '+'}${formatMs(Math.abs(t), step)}`;
}

/** Formats a time for the axis or panels with a precision suited to `step`. */
export function formatMs(t: number, step = 1): string {
  const a = Math.abs(t);
  if (a >= 1000 && step >= 100) return `${(t / 1000).toFixed(step >= 1000 ? 0 : 1)} s`;
  if (a >= 1000) return `${(t / 1000).toFixed(Math.min(4, Math.max(1, Math.ceil(-Math.log10(step / 1000)))))} s`;
  const digits = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return `${t.toFixed(digits)} ms`;
}
