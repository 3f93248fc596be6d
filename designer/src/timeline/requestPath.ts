// A request's whole path through the lanes: its batches, its handoffs and its state changes, found incrementally.
import { STATE_NAMES, type EventStore } from './eventStore.ts';

export interface StateChange {
  t: number;
  model: string | null;
  state: string;
}

export interface RequestPath {
  req: number;
  requestId: string;
  /** Absolute batch ids, in arrival order. */
  batches: number[];
  /** Absolute handoff ids. */
  handoffs: number[];
  states: StateChange[];
  /** Next absolute ids to scan, so that an update only looks at what arrived since. */
  nextBatch: number;
  nextHandoff: number;
  nextState: number;
}

/** Builds (or extends `prev`) the path of request index `req` from what the store retains. */
export function requestPath(store: EventStore, req: number, prev?: RequestPath): RequestPath {
  const { batches: b, handoffs: h, states: s } = store;
  const path: RequestPath =
    prev && prev.req === req
      ? { ...prev, batches: prev.batches.filter((a) => a >= b.evicted), handoffs: prev.handoffs.filter((a) => a >= h.evicted) }
      : { req, requestId: store.requestName(req), batches: [], handoffs: [], states: [], nextBatch: 0, nextHandoff: 0, nextState: 0 };
  for (let a = Math.max(path.nextBatch, b.evicted); a < b.nextAbs; a++) if (store.batchHas(b.physOfAbs(a), req)) path.batches.push(a);
  for (let a = Math.max(path.nextHandoff, h.evicted); a < h.nextAbs; a++) if (h.cols.req[h.physOfAbs(a)] === req) path.handoffs.push(a);
  const states = prev && prev.req === req ? prev.states.slice() : [];
  for (let a = Math.max(path.nextState, s.evicted); a < s.nextAbs; a++) {
    const p = s.physOfAbs(a);
    if (s.cols.req[p] !== req) continue;
    const lane = s.cols.lane[p];
    states.push({ t: s.cols.t[p], model: lane < 0 ? null : store.lanes[lane], state: STATE_NAMES[s.cols.state[p]] });
  }
  states.sort((x, y) => x.t - y.t);
  path.states = states;
  path.nextBatch = b.nextAbs;
  path.nextHandoff = h.nextAbs;
  path.nextState = s.nextAbs;
  return path;
}
