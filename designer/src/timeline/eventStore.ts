// Bounded columnar store of trace events: batches, handoffs (paired to batches in handoffPairing.ts), queues, states; the requests they name in requestTable.ts.
import { LOCAL_STATES, PHASES, REQUEST_STATES, type TraceEvent, type TraceEventOf } from '../../../shared/trace.ts';
import { ColumnRing } from './columnRing.ts';
import { EVENT_COLUMNS, type BatchRing, type HandoffRing, type QueueRing, type StateRing } from './eventColumns.ts';
import { HandoffPairing } from './handoffPairing.ts';
import { MemberRing } from './memberRing.ts';
import { RequestTable, type RequestInfo } from './requestTable.ts';

export const STATE_NAMES: readonly string[] = Array.from(new Set<string>([...LOCAL_STATES, ...REQUEST_STATES]));
export const PHASE_NAMES = PHASES;
export type Phase = (typeof PHASES)[number];
export type ConfigEvent = TraceEventOf<'config'>;

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
  batches: BatchRing;
  handoffs: HandoffRing;
  queues: QueueRing;
  states: StateRing;
  members: MemberRing;
  configs: ConfigEvent[] = [];
  private readonly pairing: HandoffPairing;
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
        this.pairing.forget(idx);
        if (ended) this.evicted['request-end']++;
      },
    });
    this.batches = new ColumnRing(EVENT_COLUMNS.batch, this.capacity);
    this.handoffs = new ColumnRing(EVENT_COLUMNS.handoff, this.capacity);
    this.queues = new ColumnRing(EVENT_COLUMNS.queue, this.capacity);
    this.states = new ColumnRing(EVENT_COLUMNS.state, this.capacity);
    this.members = new MemberRing(opts.memberCapacity ?? this.capacity * 8);
    this.pairing = new HandoffPairing(this.batches, this.handoffs, this.members);
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
      this.pairing.addLane();
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
  private pushPoint(ring: QueueRing | StateRing, t: number): number {
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
    for (const id of e.requestIds) {
      const info = this.touch(id, e.end);
      this.members.push(info.idx);
      this.pairing.memberAdded(info.idx, lane, e.start, abs);
    }
    this.pairing.batchAdded(lane, e.batchId, abs);
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
    this.pairing.handoffAdded(p, abs);
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
    this.pairing.batchEvicted(p);
    this.members.tail = b.cols.members[p] + b.cols.size[p];
    b.shift();
    this.evicted.batch++;
  }

  private evictHandoff(): void {
    const h = this.handoffs;
    const p = h.phys(0);
    this.pairing.handoffEvicted(p);
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
    const { pending, batchKeys } = this.pairing.footprint();
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
