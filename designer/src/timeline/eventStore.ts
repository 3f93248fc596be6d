// Bounded columnar store of trace events: batches, handoffs (paired to batches as they arrive), queues, states; the requests they name in requestTable.ts.
import { LOCAL_STATES, PHASES, REQUEST_STATES, type TraceEvent, type TraceEventOf } from '../../../shared/trace.ts';
import { isReceivingBatch } from '../../../shared/timeline/pairHandoffs.ts';
import { ColumnRing } from './columnRing.ts';
import { MemberRing } from './memberRing.ts';
import { RequestTable, type RequestInfo } from './requestTable.ts';

export const STATE_NAMES: readonly string[] = Array.from(new Set<string>([...LOCAL_STATES, ...REQUEST_STATES]));
export const PHASE_NAMES = PHASES;
export type Phase = (typeof PHASES)[number];
export type ConfigEvent = TraceEventOf<'config'>;

const BATCH = {
  lane: Uint16Array,
  batchId: Float64Array,
  phase: Uint8Array,
  size: Uint32Array,
  tokens: Float64Array,
  start: Float64Array,
  end: Float64Array,
  /** Forward passes (1 + lookahead steps) and row results taken from lookahead. */
  steps: Uint16Array,
  aheadRows: Uint32Array,
  /** Prompt tokens its rows took from the prefix cache instead of feeding them. */
  cached: Uint32Array,
  /** Rows whose draw a grammar masked (structured outputs, tool calls). */
  masked: Uint32Array,
  /** Running max of `end` over the ring: non-decreasing, so binary search works on slightly unordered input. */
  maxEnd: Float64Array,
  /** Absolute position of the first request index in the member ring. */
  members: Float64Array,
};
const HANDOFF = {
  t: Float64Array,
  maxT: Float64Array,
  from: Uint16Array,
  to: Uint16Array,
  req: Int32Array,
  batchId: Float64Array,
  tokens: Float64Array,
  kept: Uint8Array,
  /** Absolute batch ids of the sending and receiving batch, -1 until known. */
  fromAbs: Float64Array,
  toAbs: Float64Array,
};
const QUEUE = { t: Float64Array, maxT: Float64Array, lane: Uint16Array, length: Int32Array };
const STATE = { t: Float64Array, maxT: Float64Array, lane: Int16Array, req: Int32Array, state: Uint8Array };

export interface StoreOptions {
  /** Cap on retained batch + handoff + queue + state events; the oldest are dropped past it. */
  capacity?: number;
  /** Cap on remembered requests (names, request-end payloads). */
  maxRequests?: number;
  maxConfigs?: number;
  /** Cap on request ids held by batches (sum of batch sizes). */
  memberCapacity?: number;
  /** Cap on output token ids kept from request-end events (long generations are large); the oldest go first. */
  maxEndTokens?: number;
}

type Counts = Record<TraceEvent['type'], number>;
/** Same mode, state, deadline, lookahead and thresholds, whenever said. */
function sameConfig(a: ConfigEvent, b: ConfigEvent): boolean {
  return JSON.stringify({ ...a, t: 0 }) === JSON.stringify({ ...b, t: 0 });
}

const zeroCounts = (): Counts => ({ batch: 0, handoff: 0, 'request-state': 0, queue: 0, 'request-end': 0, config: 0 });

export class EventStore {
  readonly capacity: number;
  readonly maxConfigs: number;
  /** The requests named by retained events (and more, up to its cap). */
  readonly table: RequestTable;
  lanes: string[] = [];
  private laneIdx = new Map<string, number>();
  batches: ColumnRing<typeof BATCH>;
  handoffs: ColumnRing<typeof HANDOFF>;
  queues: ColumnRing<typeof QUEUE>;
  states: ColumnRing<typeof STATE>;
  members: MemberRing;
  configs: ConfigEvent[] = [];
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
  received: Counts = zeroCounts();
  evicted: Counts = zeroCounts();
  /** Longest batch and worst lateness seen: they bound how far a window query must look past its edges. */
  maxBatchMs = 0;
  batchDisorderMs = 0;
  pointDisorderMs = 0;
  /** Latest time seen in any event. */
  latestT = -Infinity;
  earliestT = Infinity;
  /** Bumped on every change; renderers and caches compare it. */
  version = 0;

  constructor(opts: StoreOptions = {}) {
    this.capacity = opts.capacity ?? 200_000;
    this.maxConfigs = opts.maxConfigs ?? 1000;
    this.table = new RequestTable(opts.maxRequests ?? 20_000, opts.maxEndTokens ?? 2_000_000, {
      oldestRetainedT: () => this.oldestRetainedT(),
      forgotten: (idx, ended) => {
        this.pendingTo.delete(idx);
        if (ended) this.evicted['request-end']++;
      },
    });
    this.batches = new ColumnRing(BATCH, this.capacity);
    this.handoffs = new ColumnRing(HANDOFF, this.capacity);
    this.queues = new ColumnRing(QUEUE, this.capacity);
    this.states = new ColumnRing(STATE, this.capacity);
    this.members = new MemberRing(opts.memberCapacity ?? this.capacity * 8);
  }

  get size(): number {
    return this.batches.length + this.handoffs.length + this.queues.length + this.states.length;
  }

  lane(model: string): number {
    let i = this.laneIdx.get(model);
    if (i === undefined) {
      i = this.lanes.length;
      this.lanes.push(model);
      this.laneIdx.set(model, i);
      this.batchByKey.push(new Map());
      this.pendingFrom.push(new Map());
    }
    return i;
  }

  laneOf(model: string): number {
    return this.laneIdx.get(model) ?? -1;
  }

  get requests(): ReadonlyMap<number, RequestInfo> {
    return this.table.requests;
  }

  /** Recently seen request indices, newest last (for the request list). */
  get recent(): readonly number[] {
    return this.table.recent;
  }

  requestIndex(id: string): number {
    return this.table.index(id);
  }

  requestName(idx: number): string {
    return this.table.name(idx);
  }

  private touch(id: string, t: number): RequestInfo {
    return this.table.touch(id, t);
  }

  addMany(events: readonly TraceEvent[]): void {
    for (const e of events) this.add(e);
  }

  add(e: TraceEvent): void {
    this.received[e.type]++;
    this.version++;
    const t = e.type === 'batch' ? e.end : e.t;
    if (t > this.latestT) this.latestT = t;
    const t0 = e.type === 'batch' ? e.start : e.type === 'request-end' ? e.admittedAt : e.t;
    if (t0 < this.earliestT) this.earliestT = t0;
    switch (e.type) {
      case 'batch':
        return this.addBatch(e);
      case 'handoff':
        return this.addHandoff(e);
      case 'queue': {
        this.makeRoom();
        const q = this.queues;
        const p = this.pushPoint(q, e.t);
        q.cols.lane[p] = this.lane(e.model);
        q.cols.length[p] = e.length;
        return;
      }
      case 'request-state': {
        this.makeRoom();
        const info = this.touch(e.requestId, e.t);
        if (e.model === null) info.status = e.state;
        const s = this.states;
        const p = this.pushPoint(s, e.t);
        s.cols.lane[p] = e.model === null ? -1 : this.lane(e.model);
        s.cols.req[p] = info.idx;
        s.cols.state[p] = Math.max(0, STATE_NAMES.indexOf(e.state));
        return;
      }
      case 'request-end':
        return this.table.end(e);
      case 'config': {
        for (const m of Object.keys(e.thresholds)) this.lane(m);
        // Kept sorted by time: the config in force at t is the last one at or before t.
        let i = this.configs.length;
        while (i > 0 && this.configs[i - 1].t > e.t) i--;
        // The server says the config again whenever a reader starts tracing: the same values are no change.
        if (i > 0 && sameConfig(this.configs[i - 1], e)) return;
        if (i < this.configs.length && sameConfig(this.configs[i], e)) {
          this.configs[i] = e;
          return;
        }
        this.configs.splice(i, 0, e);
        if (this.configs.length > this.maxConfigs) {
          this.configs.shift();
          this.evicted.config++;
        }
        return;
      }
    }
  }

  /** Appends a point event at time t; the running max time keeps the ring searchable when events arrive out of order. */
  private pushPoint(ring: ColumnRing<typeof QUEUE> | ColumnRing<typeof STATE>, t: number): number {
    const p = ring.push();
    const prevMax = ring.length > 1 ? ring.cols.maxT[ring.phys(ring.length - 2)] : -Infinity;
    ring.cols.t[p] = t;
    ring.cols.maxT[p] = Math.max(prevMax, t);
    this.pointDisorderMs = Math.max(this.pointDisorderMs, prevMax - t);
    return p;
  }

  private addBatch(e: TraceEventOf<'batch'>): void {
    const lane = this.lane(e.model);
    this.makeRoom();
    while (!this.members.fits(e.requestIds.length) && this.batches.length) this.evictBatch();
    if (!this.members.fits(e.requestIds.length)) return; // a single batch larger than the whole member cap
    const b = this.batches;
    const abs = b.nextAbs;
    const p = b.push();
    const prevMax = b.length > 1 ? b.cols.maxEnd[b.phys(b.length - 2)] : -Infinity;
    b.cols.lane[p] = lane;
    b.cols.batchId[p] = e.batchId;
    b.cols.phase[p] = Math.max(0, PHASES.indexOf(e.phase));
    b.cols.size[p] = e.requestIds.length;
    b.cols.tokens[p] = e.tokens;
    b.cols.start[p] = e.start;
    b.cols.end[p] = e.end;
    b.cols.steps[p] = e.steps ?? 1;
    b.cols.aheadRows[p] = e.aheadRows ?? 0;
    b.cols.cached[p] = e.cachedTokens ?? 0;
    b.cols.masked[p] = e.maskedRows ?? 0;
    b.cols.maxEnd[p] = Math.max(prevMax, e.end);
    b.cols.members[p] = this.members.head;
    this.batchDisorderMs = Math.max(this.batchDisorderMs, prevMax - e.end);
    this.maxBatchMs = Math.max(this.maxBatchMs, e.end - e.start);
    this.batchByKey[lane].set(e.batchId, abs);
    const h = this.handoffs;
    for (const id of e.requestIds) {
      const info = this.touch(id, e.end);
      this.members.push(info.idx);
      // Is this the batch the request's latest handoff was waiting for? The entry stays after a match:
      // with out-of-order input an earlier batch of the same request may still arrive and win.
      const list = this.pendingTo.get(info.idx);
      if (list) {
        for (const ha of list) {
          const hp = h.physOfAbs(ha);
          if (hp < 0 || h.cols.to[hp] !== lane || !isReceivingBatch({ t: h.cols.t[hp] }, e.start)) continue;
          const cur = b.physOfAbs(h.cols.toAbs[hp]);
          if (cur < 0 || e.start < b.cols.start[cur]) h.cols.toAbs[hp] = abs;
        }
      }
    }
    // Handoffs that named this batch before it arrived.
    const waiting = this.pendingFrom[lane].get(e.batchId);
    if (waiting) {
      for (const ha of waiting) {
        const hp = h.physOfAbs(ha);
        if (hp >= 0) h.cols.fromAbs[hp] = abs;
      }
      this.pendingFrom[lane].delete(e.batchId);
    }
  }

  private addHandoff(e: TraceEventOf<'handoff'>): void {
    this.makeRoom();
    const from = this.lane(e.from);
    const to = this.lane(e.to);
    const info = this.touch(e.requestId, e.t);
    const h = this.handoffs;
    const abs = h.nextAbs;
    const p = h.push();
    const prevMax = h.length > 1 ? h.cols.maxT[h.phys(h.length - 2)] : -Infinity;
    h.cols.t[p] = e.t;
    h.cols.maxT[p] = Math.max(prevMax, e.t);
    this.pointDisorderMs = Math.max(this.pointDisorderMs, prevMax - e.t);
    h.cols.from[p] = from;
    h.cols.to[p] = to;
    h.cols.req[p] = info.idx;
    h.cols.batchId[p] = e.batchId;
    h.cols.tokens[p] = e.tokens;
    h.cols.kept[p] = e.kept ? 1 : 0;
    const fromAbs = this.batchByKey[from].get(e.batchId);
    h.cols.fromAbs[p] = fromAbs ?? -1;
    if (fromAbs === undefined) {
      let list = this.pendingFrom[from].get(e.batchId);
      if (!list) this.pendingFrom[from].set(e.batchId, (list = []));
      list.push(abs);
    }
    h.cols.toAbs[p] = this.findReceivingBatch(to, info.idx, e.t);
    let list = this.pendingTo.get(info.idx);
    if (!list) this.pendingTo.set(info.idx, (list = []));
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

  /** Keeps the total under the cap by dropping the globally oldest event (by emission time). */
  private makeRoom(): void {
    while (this.size >= this.capacity) {
      const { batches: b, handoffs: h, queues: q, states: s } = this;
      const kb = b.length ? b.cols.end[b.phys(0)] : Infinity;
      const kh = h.length ? h.cols.t[h.phys(0)] : Infinity;
      const kq = q.length ? q.cols.t[q.phys(0)] : Infinity;
      const ks = s.length ? s.cols.t[s.phys(0)] : Infinity;
      const min = Math.min(kb, kh, kq, ks);
      if (min === kb) this.evictBatch();
      else if (min === kh) this.evictHandoff();
      else if (min === kq) {
        q.shift();
        this.evicted.queue++;
      } else {
        s.shift();
        this.evicted['request-state']++;
      }
    }
  }

  private evictBatch(): void {
    const b = this.batches;
    const p = b.phys(0);
    const lane = b.cols.lane[p];
    const map = this.batchByKey[lane];
    if (map.get(b.cols.batchId[p]) === b.evicted) map.delete(b.cols.batchId[p]);
    this.members.tail = b.cols.members[p] + b.cols.size[p];
    b.shift();
    this.evicted.batch++;
  }

  private evictHandoff(): void {
    const h = this.handoffs;
    const p = h.phys(0);
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
    h.shift();
    this.evicted.handoff++;
  }

  /** Oldest time any retained event still refers to. */
  oldestRetainedT(): number {
    const { batches: b, handoffs: h, queues: q, states: s } = this;
    return Math.min(
      b.length ? b.cols.start[b.phys(0)] : Infinity,
      h.length ? h.cols.t[h.phys(0)] : Infinity,
      q.length ? q.cols.t[q.phys(0)] : Infinity,
      s.length ? s.cols.t[s.phys(0)] : Infinity,
    );
  }

  /** Request indices of the batch at physical index p. */
  batchMembers(p: number): number[] {
    const out: number[] = [];
    const m0 = this.batches.cols.members[p];
    for (let k = 0; k < this.batches.cols.size[p]; k++) out.push(this.members.at(m0 + k));
    return out;
  }

  batchHas(p: number, req: number): boolean {
    const m0 = this.batches.cols.members[p];
    for (let k = 0; k < this.batches.cols.size[p]; k++) if (this.members.at(m0 + k) === req) return true;
    return false;
  }

  /** The config in force at time t (the last one at or before it; the first one if t precedes all). */
  configAt(t: number): ConfigEvent | undefined {
    let found: ConfigEvent | undefined = this.configs[0];
    for (const c of this.configs) if (c.t <= t) found = c;
    return found;
  }

  /** Sizes of everything that grows with input: what the memory-bound tests watch. */
  footprint(): { events: number; requests: number; members: number; pending: number; batchKeys: number; endTokens: number; bytes: number } {
    let pending = this.pendingTo.size;
    for (const m of this.pendingFrom) pending += m.size;
    let batchKeys = 0;
    for (const m of this.batchByKey) batchKeys += m.size;
    return {
      events: this.size,
      requests: this.requests.size,
      members: this.members.length,
      pending,
      batchKeys,
      endTokens: this.table.endTokens,
      bytes: this.batches.bytes() + this.handoffs.bytes() + this.queues.bytes() + this.states.bytes() + this.members.buf.byteLength,
    };
  }
}
