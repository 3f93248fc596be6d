// Lane geometry of the timeline canvas: one lane per model, a batch row with the queue strip under it.

export interface LaneGeom {
  lane: number;
  model: string;
  top: number;
  bottom: number;
  /** Batch boxes row. */
  batchTop: number;
  batchH: number;
  /** Waiting-queue strip under the batches. */
  queueTop: number;
  queueH: number;
}

export interface Layout {
  width: number;
  height: number;
  /** Left column for lane labels; the plot starts after it. */
  gutter: number;
  axisH: number;
  lanes: LaneGeom[];
  plotX0: number;
  plotWidth: number;
}

export const GUTTER = 176;
export const AXIS_H = 30;

export function computeLayout(models: readonly string[], width: number, height: number): Layout {
  const n = Math.max(1, models.length);
  const avail = Math.max(0, height - AXIS_H - 8);
  const per = Math.max(84, Math.min(240, avail / n));
  const lanes = models.map((model, lane) => {
    const top = AXIS_H + lane * per;
    const pad = Math.round(Math.min(26, per * 0.14));
    // Rows stop growing past a readable size; the rest is the corridor the handoff arrows cross.
    const batchH = Math.round(Math.min(64, per * 0.42));
    const queueH = Math.round(Math.min(44, per * 0.26));
    const batchTop = top + pad;
    const queueTop = batchTop + batchH + 4;
    return { lane, model, top, bottom: top + per, batchTop, batchH, queueTop, queueH };
  });
  const plotX0 = GUTTER;
  return { width, height, gutter: GUTTER, axisH: AXIS_H, lanes, plotX0, plotWidth: Math.max(1, width - plotX0 - 12) };
}

/** True while the layout's lanes are these models in this order (the lane names it draws are its own copy). */
export function layoutFits(layout: Layout, models: readonly string[]): boolean {
  return layout.lanes.length === models.length && layout.lanes.every((l, i) => l.model === models[i]);
}

/** The lane whose row (batches or queue) contains y, or -1. */
export function laneAtY(layout: Layout, y: number): number {
  for (const l of layout.lanes) if (y >= l.top && y < l.bottom) return l.lane;
  return -1;
}
