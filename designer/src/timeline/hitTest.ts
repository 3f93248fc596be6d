// Which batch box lies under a pointer position (for click-to-select and hover).
import type { EventStore } from './eventStore.ts';
import type { Layout } from './layout.ts';
import { timeToX, xToTime, type Viewport } from './viewport.ts';
import { batchRange } from './windowRange.ts';

/** Physical index of the batch under (x, y) within `tolPx`, nearest first; -1 when none. */
export function hitBatch(store: EventStore, layout: Layout, v: Viewport, x: number, y: number, tolPx = 3): number {
  const lane = layout.lanes.find((l) => y >= l.batchTop - tolPx && y <= l.batchTop + l.batchH + tolPx);
  if (!lane) return -1;
  const ta = xToTime(v, x - tolPx);
  const tb = xToTime(v, x + tolPx);
  const b = store.batches;
  const c = b.cols;
  const [i0, i1] = batchRange(store, ta, tb);
  let best = -1;
  let bestD = Infinity;
  for (let i = i0; i < i1; i++) {
    const p = b.phys(i);
    if (c.lane[p] !== lane.lane || c.end[p] < ta || c.start[p] > tb) continue;
    const xs = timeToX(v, c.start[p]);
    const xe = timeToX(v, c.end[p]);
    const d = x < xs ? xs - x : x > xe ? x - xe : 0;
    if (d < bestD) {
      bestD = d;
      best = p;
    }
  }
  return best;
}
