// Fixed timeline frames for the painter tests: small deterministic traces in a store, with the views and options the page would pass.
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { computeLayout, type Layout } from '../../designer/src/timeline/layout.ts';
import type { DrawOptions } from '../../designer/src/timeline/paint/frame.ts';
import { requestPath } from '../../designer/src/timeline/requestPath.ts';
import type { Viewport } from '../../designer/src/timeline/viewport.ts';
import { generateTrace } from '../../shared/timeline/generateTrace.ts';
import type { TraceEvent } from '../../shared/trace.ts';

/** What drawTimeline takes besides the context. */
export interface Scene {
  name: string;
  store: EventStore;
  layout: Layout;
  v: Viewport;
  o: DrawOptions;
}

const W = 900;
const H = 480;

const storeOf = (events: TraceEvent[]): EventStore => {
  const s = new EventStore();
  s.addMany(events);
  return s;
};
const viewOf = (layout: Layout, t0: number, t1: number): Viewport => ({ t0, t1, x0: layout.plotX0, width: layout.plotWidth });
const noOptions = (): Scene['o'] => ({ path: null, selectedBatch: -1, range: null, hover: null, liveNow: null, origin: 0, gauges: new Map() });

/** r2r, 120 requests: about 1,600 handoffs, so the whole-trace view takes the dense (histogram) path; thresholds change at ~400 ms. */
export const r2rEvents = (): TraceEvent[] => generateTrace({ algorithm: 'r2r', requests: 120, concurrency: 12, maxTokens: 32, seed: 5, changeConfigAt: 400 });

export function scenes(): Scene[] {
  const events = r2rEvents();
  const store = storeOf(events);
  const layout = computeLayout(store.lanes, W, H);
  const out: Scene[] = [];

  // 1. The whole trace, as a file: pixel-column runs, queue strips, handoff histogram, both config marks.
  out.push({ name: 'fit-dense', store, layout, v: viewOf(layout, store.earliestT - 20, store.latestT + 20), o: noOptions() });

  // 2. Zoomed on the config change with a request selected, a batch clicked, a range, a hover tooltip and gauges.
  const t0 = 300;
  const t1 = 420;
  const h = store.handoffs;
  let req = -1;
  for (let i = 0; i < h.length && req < 0; i++) {
    const p = h.phys(i);
    if (h.cols.t[p] > t0 + 10 && h.cols.t[p] < t1 - 10 && h.cols.toAbs[p] >= 0 && !h.cols.kept[p]) req = h.cols.req[p];
  }
  const path = requestPath(store, req);
  const hoverAbs = path.batches[Math.floor(path.batches.length / 2)];
  out.push({
    name: 'zoomed-selected',
    store,
    layout,
    v: viewOf(layout, t0, t1),
    o: {
      ...noOptions(),
      path,
      selectedBatch: path.batches[0],
      range: [395, 340],
      hover: { x: 600, y: 120, batch: store.batches.physOfAbs(hoverAbs) },
      origin: 2.5,
      gauges: new Map([
        [store.lanes[0], { running: 7, waiting: 3, pendingReturn: 2, kvBytes: 3.5 * 1024 ** 2 }],
        [store.lanes[1], { running: 4, waiting: 0, pendingReturn: 0, kvBytes: 900 }],
      ]),
    },
  });

  // 3. A live feed cut at 2 s: arrows with heads, handoffs still in flight, the "now" line; unselected (nothing dimmed).
  const cut = 2000;
  const live = storeOf(events.filter((e) => ('start' in e ? e.start : e.t) <= cut && ('end' in e ? e.end <= cut : true)));
  const liveLayout = computeLayout(live.lanes, W, H);
  out.push({ name: 'live-arrows', store: live, layout: liveLayout, v: viewOf(liveLayout, cut - 150, cut + 3), o: { ...noOptions(), liveNow: cut, origin: 0 } });

  // 4. Three lanes (me), mid-zoom: two corridors, a mix of boxes and column runs.
  const me = storeOf(generateTrace({ algorithm: 'me', requests: 40, concurrency: 8, maxTokens: 24, seed: 9 }));
  const meLayout = computeLayout(me.lanes, W, H + 120);
  out.push({ name: 'me-three-lanes', store: me, layout: meLayout, v: viewOf(meLayout, 100, 1900), o: noOptions() });
  return out;
}
