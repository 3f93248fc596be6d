// What the person picked on the timeline: a request (with its path through the store), a batch, a time range.
import type { EventStore } from './eventStore.ts';
import { hitBatch } from './hitTest.ts';
import type { Layout } from './layout.ts';
import { rangeStats, type RangeStats } from './rangeStats.ts';
import { requestPath, type RequestPath } from './requestPath.ts';
import type { Viewport } from './viewport.ts';

export type SelectedRequest = { req: number; path: RequestPath };

export class TimelineSelection {
  request: SelectedRequest | null = null;
  /** Absolute id of the selected batch, -1 for none. */
  batch = -1;
  range: [number, number] | null = null;
  /** A request to select once its events arrive (`?request=<id>`, the playground's link). */
  private wanted: string | null = null;

  /** `store` is read on every call: the page replaces its store when the source changes. */
  constructor(
    private readonly store: () => EventStore,
    private readonly changed: () => void,
  ) {}

  /** A new store: nothing in it is selected (a request still wanted stays wanted). */
  clear(): void {
    this.request = null;
    this.batch = -1;
    this.range = null;
  }

  /** Selects the request now if it is known, else as soon as its events arrive. */
  selectWhenSeen(id: string): void {
    this.wanted = this.selectRequest(id) ? null : id;
  }

  /** Events arrived: selects the wanted request if they named it. */
  eventsArrived(): void {
    if (this.wanted !== null && this.selectRequest(this.wanted)) this.wanted = null;
  }

  selectRequest(id: string | null): boolean {
    if (id === null) {
      this.request = null;
      this.changed();
      return true;
    }
    const store = this.store();
    const idx = store.requestIndex(id);
    if (idx < 0) return false;
    this.request = { req: idx, path: requestPath(store, idx) };
    this.changed();
    return true;
  }

  /** Click at canvas CSS pixel (x, y): selects the batch there and one of its requests (keeps the current one if it is in it). */
  selectAt(layout: Layout | null, viewport: Viewport, x: number, y: number): boolean {
    if (!layout) return false;
    const store = this.store();
    const p = hitBatch(store, layout, viewport, x, y);
    if (p < 0) {
      this.batch = -1;
      this.request = null;
      this.changed();
      return false;
    }
    const b = store.batches;
    this.batch = b.evicted + ((p - b.head + b.capacity) & b.mask);
    const members = store.batchMembers(p);
    const keep = this.request && members.includes(this.request.req);
    if (!keep && members.length) this.request = { req: members[0], path: requestPath(store, members[0]) };
    this.changed();
    return true;
  }

  selectBatchRequest(req: number): void {
    this.request = { req, path: requestPath(this.store(), req) };
    this.changed();
  }

  setRange(a: number | null, b?: number): void {
    this.range = a === null || b === undefined ? null : [Math.min(a, b), Math.max(a, b)];
    this.changed();
  }

  /** Escape: drops the range, the request and the batch. */
  drop(): void {
    this.setRange(null);
    this.request = null;
    this.batch = -1;
    this.changed();
  }

  /** Stats over the selected range, or over `view` when none is selected. */
  stats(view: { t0: number; t1: number }): RangeStats {
    const [a, b] = this.range ?? [view.t0, view.t1];
    return rangeStats(this.store(), a, b);
  }

  /** Before a frame: batches arrived since the selected request's path was traced extend it. */
  refreshPath(): void {
    const store = this.store();
    if (this.request && this.request.path.nextBatch !== store.batches.nextAbs) {
      this.request = { req: this.request.req, path: requestPath(store, this.request.req, this.request.path) };
    }
  }
}
