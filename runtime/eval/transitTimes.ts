// A request's time in the cluster on no model (entry to first engine, hand-offs crossing threads, last batch to its end): the throughput model moves requests in no time.
import type { TraceEvent } from '../../shared/trace.ts';

/** A batch as far as this needs it (routingCounts' BatchTiming has more). */
interface Span {
  model: string;
  start: number;
  end: number;
}

interface Crossing {
  to: string;
  t: number;
}

interface Ended {
  outside: number;
  /** arrived: the target's first event for it; joined: the start of its first batch there (NaN: none seen). */
  crossings: (Crossing & { arrived: number; joined: number })[];
}

interface Open {
  /** The request's state changes on engines, as they reached the trace. */
  states: { model: string; t: number }[];
  lastBatchEnd: number;
  crossings: Crossing[];
  /** Its batches, by model and launch. */
  batches: { model: string; start: number }[];
}

/**
 * Counts, per request `mine` picks, the ms it spends in flight but on no model's queue or batch:
 * admitted at the entry to its first engine event, each hand-off from the source's event to the
 * target's (beyond the batch the target was running then, which the chain already has it wait
 * for), and its last batch to its end at the entry. A row handed to a busy target can also miss the
 * target's next batch: its thread plans that batch before it reads the hand-off (1,450 of
 * 2,430 rows handed to a busy large model in r2r), so from that launch to the row's own batch counts
 * too, where the chain would have the row join the next launch. On the bundled models (an HTTP loop
 * at c = 8) this was 24–34 % of a request's time in the cluster, 1.6–1.9 ms per crossing; the
 * chain at the requests left on a model came within 9 % of the loop, at all of them 14–19 % above it.
 * Each engine thread's events reach the trace in its own messages, so a target's arrival can be
 * recorded before the hand-off that caused it: the pairing waits for the request's end and goes
 * by time, not by arrival order.
 */
export class TransitTimes {
  private readonly open = new Map<string, Open>();
  private readonly ended: Ended[] = [];

  constructor(private readonly mine: (requestId: string) => boolean) {}

  private of(id: string): Open {
    let o = this.open.get(id);
    if (!o) this.open.set(id, (o = { states: [], lastBatchEnd: -Infinity, crossings: [], batches: [] }));
    return o;
  }

  readonly onEvent = (e: TraceEvent): void => {
    if (e.type === 'batch') {
      for (const id of e.requestIds) {
        if (!this.mine(id)) continue;
        const o = this.of(id);
        o.lastBatchEnd = Math.max(o.lastBatchEnd, e.end);
        o.batches.push({ model: e.model, start: e.start });
      }
    } else if (e.type === 'handoff') {
      if (this.mine(e.requestId)) this.of(e.requestId).crossings.push({ to: e.to, t: e.t });
    } else if (e.type === 'request-state') {
      if (e.model !== null && this.mine(e.requestId)) this.of(e.requestId).states.push({ model: e.model, t: e.t });
    } else if (e.type === 'request-end' && this.mine(e.requestId)) {
      const o = this.open.get(e.requestId);
      this.open.delete(e.requestId);
      if (!o || e.status !== 'done' || o.states.length === 0 || !(o.lastBatchEnd > -Infinity)) return;
      const states = o.states.sort((a, b) => a.t - b.t);
      const crossings = o.crossings.flatMap((c) => {
        const arrival = states.find((s) => s.model === c.to && s.t >= c.t);
        const joined = o.batches.reduce((m, b) => (b.model === c.to && b.start >= c.t && b.start < m ? b.start : m), Infinity);
        return arrival ? [{ ...c, arrived: arrival.t, joined: Number.isFinite(joined) ? joined : NaN }] : [];
      });
      this.ended.push({ outside: Math.max(0, states[0].t - e.admittedAt) + Math.max(0, e.t - o.lastBatchEnd), crossings });
    }
  };

  /** Mean ms per finished request outside every model, given the batches of the same stretch (for what each target was running); null: none finished. */
  meanMs(batches: readonly Span[]): number | null {
    if (this.ended.length === 0) return null;
    const byModel = new Map<string, Span[]>();
    for (const b of batches) {
      const list = byModel.get(b.model);
      if (list) list.push(b);
      else byModel.set(b.model, [b]);
    }
    for (const list of byModel.values()) list.sort((a, b) => a.start - b.start);
    /** When the batch `model` was running at `t` ends (t itself when idle). */
    const free = (model: string, t: number): number => {
      const list = byModel.get(model) ?? [];
      let lo = 0;
      let hi = list.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (list[mid].start <= t) [found, lo] = [mid, mid + 1];
        else hi = mid - 1;
      }
      return found >= 0 && list[found].end > t ? list[found].end : t;
    };
    /** The launch of `model`'s first batch at or after `t` (Infinity: none). */
    const nextLaunch = (model: string, t: number): number => {
      const list = byModel.get(model) ?? [];
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (list[mid].start < t) lo = mid + 1;
        else hi = mid;
      }
      return lo < list.length ? list[lo].start : Infinity;
    };
    let sum = 0;
    for (const r of this.ended) {
      sum += r.outside;
      for (const c of r.crossings) {
        const freeAt = free(c.to, c.t);
        // a batch the target launched after freeing up, without the row: the row missed it (its thread planned before reading the hand-off)
        const missed = Number.isNaN(c.joined) ? 0 : c.joined - Math.min(c.joined, nextLaunch(c.to, freeAt));
        sum += Math.max(0, c.arrived - freeAt, missed);
      }
    }
    return sum / this.ended.length;
  }
}
