// One frame's read-only bundle for the paint layers: the data, the options, the geometry and the time-to-pixel mapping.
import type { EventStore } from '../eventStore.ts';
import type { Layout } from '../layout.ts';
import type { RequestPath } from '../requestPath.ts';
import { tickStep, type Viewport } from '../viewport.ts';
import { browserPath, type PathSink } from './canvas.ts';

/** Live per-model gauges from the server's `stats` messages, drawn in the lane labels. */
export interface LaneGauge {
  running: number;
  waiting: number;
  pendingReturn: number;
  kvBytes: number;
}

export interface DrawOptions {
  path: RequestPath | null;
  /** Absolute id of the clicked batch, -1 for none. */
  selectedBatch: number;
  range: [number, number] | null;
  hover: { x: number; y: number; batch: number } | null;
  /** Current time of a live feed (draws the "now" line), null for files. */
  liveNow: number | null;
  /** Axis labels are relative to this time. */
  origin: number;
  gauges: Map<string, LaneGauge>;
}

/** What the last frame drew: the test hook exposes it so e2e tests can compare with the events received. */
export interface DrawStats {
  lanes: string[];
  /** Batches overlapping the view (every one lands in a box or in a pixel-column run). */
  visibleBatches: number;
  /** Boxes drawn as individual rectangles (wide enough to see). */
  batchBoxes: number;
  /** Pixel-column runs standing for batches narrower than ~2 px. */
  columnRuns: number;
  visibleHandoffs: number;
  /** Handoffs with both batches known that were drawn: as arrows, or (dense views) counted into the histogram. */
  arrows: number;
  keptArrows: number;
  discardedArrows: number;
  /** Handoffs still waiting for their receiving batch (drawn as short stubs). */
  inFlight: number;
  highlightedBoxes: number;
  highlightedArrows: number;
  queueEvents: number;
  configMarks: number;
}

export interface Frame {
  readonly store: EventStore;
  readonly layout: Layout;
  readonly v: Viewport;
  readonly o: DrawOptions;
  readonly width: number;
  readonly height: number;
  /** Plot area's left and right edge (px); the gutter with the lane labels is left of plotL. */
  readonly plotL: number;
  readonly plotR: number;
  /** Pixel columns of the per-column buffers (the plot width plus a guard column). */
  readonly W: number;
  /** Lanes. */
  readonly nl: number;
  /** A selected request dims everything that is not on its path. */
  readonly dim: boolean;
  /** Axis tick step (ms): the grid and the axis caption must agree on it. */
  readonly step: number;
  /** Path factory: the page's Path2D, or a recording stand-in in tests. */
  readonly newPath: () => PathSink;
}

export function makeFrame(store: EventStore, layout: Layout, v: Viewport, o: DrawOptions, newPath: () => PathSink = browserPath): Frame {
  const plotL = layout.plotX0;
  return {
    store,
    layout,
    v,
    o,
    width: layout.width,
    height: layout.height,
    plotL,
    plotR: plotL + layout.plotWidth,
    W: Math.ceil(layout.plotWidth) + 2,
    nl: layout.lanes.length,
    dim: o.path !== null,
    step: tickStep(v),
    newPath,
  };
}
