// The plain-data view of what the timeline holds and draws, for window.__timeline (e2e tests read it).
import type { FeedStatus } from './feedMessages.ts';
import type { DrawStats } from './paint/frame.ts';
import type { EventStore } from './eventStore.ts';
import type { Counts } from './feedState.ts';
import type { Source, TimelineController } from './timelineController.ts';

export function describeTimeline(c: TimelineController): TimelineSnapshot {
  const s = c.store;
  const path = c.selected?.path;
  return {
    source: c.source.kind,
    connection: c.feed.connection,
    ingestRate: c.feed.ingestRate,
    lanes: s.lanes.slice(),
    drawn: c.lastDraw ? { ...c.lastDraw, lanes: c.lastDraw.lanes.slice() } : null,
    store: {
      batches: s.batches.length,
      handoffs: s.handoffs.length,
      queues: s.queues.length,
      states: s.states.length,
      requests: s.requests.size,
      configs: s.configs.length,
      received: { ...s.received },
      evicted: { ...s.evicted },
      pairedHandoffs: countPaired(s),
      bytes: s.footprint().bytes,
    },
    feed: { received: { ...c.feed.received }, serverDropped: c.feed.serverDropped, invalid: c.feed.invalid, snapshots: c.feed.snapshots, held: c.heldCount },
    view: { t0: c.view.t0, t1: c.view.t1, follow: c.follow, paused: c.paused, range: c.range },
    selected: path
      ? {
          requestId: path.requestId,
          batches: path.batches.map((a) => {
            const p = s.batches.physOfAbs(a);
            return { model: s.lanes[s.batches.cols.lane[p]], batchId: s.batches.cols.batchId[p] };
          }),
          handoffs: path.handoffs.map((a) => {
            const p = s.handoffs.physOfAbs(a);
            const c = s.handoffs.cols;
            const fp = s.batches.physOfAbs(c.fromAbs[p]);
            const tp = s.batches.physOfAbs(c.toAbs[p]);
            return {
              from: s.lanes[c.from[p]],
              to: s.lanes[c.to[p]],
              kept: c.kept[p] === 1,
              t: c.t[p],
              fromBatch: fp < 0 ? null : s.batches.cols.batchId[fp],
              toBatch: tp < 0 ? null : s.batches.cols.batchId[tp],
            };
          }),
          states: path.states.length,
        }
      : null,
  };
}

function countPaired(s: EventStore): number {
  let n = 0;
  const h = s.handoffs;
  for (let i = 0; i < h.length; i++) {
    const p = h.phys(i);
    if (s.batches.physOfAbs(h.cols.fromAbs[p]) >= 0 && s.batches.physOfAbs(h.cols.toAbs[p]) >= 0) n++;
  }
  return n;
}

export interface TimelineSnapshot {
  source: Source['kind'];
  connection: FeedStatus | 'idle';
  /** Events applied per second over the last 2 s. */
  ingestRate: number;
  lanes: string[];
  drawn: DrawStats | null;
  store: {
    batches: number;
    handoffs: number;
    queues: number;
    states: number;
    requests: number;
    configs: number;
    received: Counts;
    evicted: Counts;
    pairedHandoffs: number;
    bytes: number;
  };
  feed: { received: Counts; serverDropped: number; invalid: number; snapshots: number; held: number };
  view: { t0: number; t1: number; follow: boolean; paused: boolean; range: [number, number] | null };
  selected: {
    requestId: string;
    batches: { model: string; batchId: number }[];
    handoffs: { from: string; to: string; kept: boolean; t: number; fromBatch: number | null; toBatch: number | null }[];
    states: number;
  } | null;
}
