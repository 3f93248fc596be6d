// Canvas painter of the timeline: builds the frame and paints the layers of paint/ in order, bottom to top.
import type { EventStore } from './eventStore.ts';
import type { Layout } from './layout.ts';
import type { Viewport } from './viewport.ts';
import { drawAxis, drawAxisCaption } from './paint/axis.ts';
import { drawBatches } from './paint/batches.ts';
import type { Paint2D } from './paint/canvas.ts';
import { drawConfigMarks } from './paint/configMarks.ts';
import { makeFrame, type DrawOptions, type DrawStats } from './paint/frame.ts';
import { drawHandoffs } from './paint/handoffs.ts';
import { drawLaneLabels } from './paint/labels.ts';
import { drawLaneBands } from './paint/lanes.ts';
import { drawOverlays } from './paint/overlays.ts';
import { drawQueues } from './paint/queues.ts';
import { drawSelection } from './paint/selection.ts';
import { drawTooltip } from './paint/tooltip.ts';

/**
 * The order is the picture: the selection goes over the dimmed boxes and arrows, the marks and the range
 * over the selection, and the gutter labels after the plot's clip is lifted so that nothing covers them.
 */
export function drawTimeline(ctx: Paint2D, store: EventStore, layout: Layout, v: Viewport, o: DrawOptions): DrawStats {
  const f = makeFrame(store, layout, v, o);
  drawLaneBands(ctx, f);
  drawAxis(ctx, f);

  ctx.save();
  ctx.beginPath();
  ctx.rect(f.plotL, layout.axisH, f.plotR - f.plotL, f.height - layout.axisH);
  ctx.clip();
  const { queueEvents, queueMax } = drawQueues(ctx, f);
  const boxes = drawBatches(ctx, f);
  const { corridorMax, ...arrows } = drawHandoffs(ctx, f);
  const selection = drawSelection(ctx, f);
  const configMarks = drawConfigMarks(ctx, f);
  drawOverlays(ctx, f);
  ctx.restore();

  drawLaneLabels(ctx, f, queueMax, corridorMax);
  drawAxisCaption(ctx, f);
  drawTooltip(ctx, f);
  return { lanes: layout.lanes.map((l) => l.model), ...boxes, ...arrows, ...selection, queueEvents, configMarks };
}
