// Pairs each retained handoff with its sending and receiving batch as events arrive, in any order.
import { isReceivingBatch } from '../../../shared/timeline/pairHandoffs.ts';
import type { BatchRing, HandoffRing } from './eventColumns.ts';
import type { MemberRing } from './memberRing.ts';

export class HandoffPairing {
  /** (lane, batchId) -> absolute batch id, for handoff.batchId lookups. */
  private batchByKey: Map<number, number>[] = [];
  /** Handoffs whose sending batch has not arrived yet, by lane then batchId. */
  private pendingFrom: Map<number, number[]>[] = [];
  /**
   * A request's latest few handoffs, by request index: each one takes the earliest batch of the
   * request on its receiver that starts after it. Several, because with out-of-order input a
   * request's next handoff can arrive before the batch that received the previous one.
   */
  private pendingTo = new Map<number, number[]>();

  constructor(
    private readonly batches: BatchRing,
    private readonly handoffs: HandoffRing,
    private readonly members: MemberRing,
  ) {}

  addLane(): void {
    this.batchByKey.push(new Map());
    this.pendingFrom.push(new Map());
  }

  /** The request is no longer remembered: its handoffs wait for no more batches. */
  forget(req: number): void {
    this.pendingTo.delete(req);
  }

  /** A batch arrived as absolute id `abs`: handoffs that named it before it arrived now know their sender. */
  batchAdded(lane: number, batchId: number, abs: number): void {
    this.batchByKey[lane].set(batchId, abs);
    const waiting = this.pendingFrom[lane].get(batchId);
    if (!waiting) return;
    const h = this.handoffs;
    for (const ha of waiting) {
      const hp = h.physOfAbs(ha);
      if (hp >= 0) h.cols.fromAbs[hp] = abs;
    }
    this.pendingFrom[lane].delete(batchId);
  }

  /**
   * Request `req` is a member of the batch `abs` on `lane` starting at `start`: is this the batch its latest
   * handoffs were waiting for? The entry stays after a match: with out-of-order input an earlier batch of
   * the same request may still arrive and win.
   */
  memberAdded(req: number, lane: number, start: number, abs: number): void {
    const list = this.pendingTo.get(req);
    if (!list) return;
    const { batches: b, handoffs: h } = this;
    for (const ha of list) {
      const hp = h.physOfAbs(ha);
      if (hp < 0 || h.cols.to[hp] !== lane || !isReceivingBatch({ t: h.cols.t[hp] }, start)) continue;
      const cur = b.physOfAbs(h.cols.toAbs[hp]);
      if (cur < 0 || start < b.cols.start[cur]) h.cols.toAbs[hp] = abs;
    }
  }

  /** The handoff at physical index p (absolute id abs), its other columns written: finds or awaits its batches. */
  handoffAdded(p: number, abs: number): void {
    const c = this.handoffs.cols;
    const from = c.from[p];
    const batchId = c.batchId[p];
    const req = c.req[p];
    const fromAbs = this.batchByKey[from].get(batchId);
    c.fromAbs[p] = fromAbs ?? -1;
    if (fromAbs === undefined) {
      let list = this.pendingFrom[from].get(batchId);
      if (!list) this.pendingFrom[from].set(batchId, (list = []));
      list.push(abs);
    }
    c.toAbs[p] = this.findReceivingBatch(c.to[p], req, c.t[p]);
    let list = this.pendingTo.get(req);
    if (!list) this.pendingTo.set(req, (list = []));
    list.push(abs);
    if (list.length > 4) list.shift();
  }

  /**
   * For input where the receiving batch arrived before the handoff: scan back over batches that
   * end after the handoff (in live order, usually none) for the earliest one of the request on `to`.
   */
  private findReceivingBatch(lane: number, req: number, t: number): number {
    const b = this.batches;
    let best = -1;
    let bestStart = Infinity;
    for (let i = b.length - 1; i >= 0; i--) {
      const p = b.phys(i);
      if (b.cols.maxEnd[p] < t) break;
      if (b.cols.lane[p] !== lane || !isReceivingBatch({ t }, b.cols.start[p]) || b.cols.start[p] >= bestStart) continue;
      const m0 = b.cols.members[p];
      for (let k = 0; k < b.cols.size[p]; k++) {
        if (this.members.at(m0 + k) === req) {
          best = b.evicted + i;
          bestStart = b.cols.start[p];
          break;
        }
      }
    }
    return best;
  }

  /** The oldest batch (physical index p) is about to be dropped. */
  batchEvicted(p: number): void {
    const b = this.batches;
    const map = this.batchByKey[b.cols.lane[p]];
    if (map.get(b.cols.batchId[p]) === b.evicted) map.delete(b.cols.batchId[p]);
  }

  /** The oldest handoff (physical index p) is about to be dropped: nothing waits on its behalf any more. */
  handoffEvicted(p: number): void {
    const h = this.handoffs;
    const abs = h.evicted;
    if (h.cols.fromAbs[p] < 0) {
      const m = this.pendingFrom[h.cols.from[p]];
      const list = m.get(h.cols.batchId[p]);
      if (list) {
        const rest = list.filter((a) => a !== abs);
        if (rest.length) m.set(h.cols.batchId[p], rest);
        else m.delete(h.cols.batchId[p]);
      }
    }
    const waiting = this.pendingTo.get(h.cols.req[p]);
    if (waiting) {
      const rest = waiting.filter((a) => a !== abs);
      if (rest.length) this.pendingTo.set(h.cols.req[p], rest);
      else this.pendingTo.delete(h.cols.req[p]);
    }
  }

  /** Entries kept for arrivals still to come, and batch keys: what the memory-bound tests watch. */
  footprint(): { pending: number; batchKeys: number } {
    let pending = this.pendingTo.size;
    for (const m of this.pendingFrom) pending += m.size;
    let batchKeys = 0;
    for (const m of this.batchByKey) batchKeys += m.size;
    return { pending, batchKeys };
  }
}
