// The requests the timeline remembers, by small index: names, first and last times, status and end payloads, within caps on count and token ids.
import type { TraceEventOf } from '../../../shared/trace.ts';

export type RequestEnd = TraceEventOf<'request-end'>;

export interface RequestInfo {
  idx: number;
  id: string;
  firstT: number;
  lastT: number;
  /** Latest entry-level state (admitted, streaming, done, ...). */
  status: string;
  end?: RequestEnd;
  /** Output tokens dropped from `end` to keep memory bounded (their count). */
  tokensDropped?: number;
}

/** What the table asks of the store that holds it. */
export interface RequestTableHost {
  /** Oldest time any retained event still refers to: requests last seen before it can go first. */
  oldestRetainedT(): number;
  /** A request was forgotten; `ended` when it had a request-end payload. */
  forgotten(idx: number, ended: boolean): void;
}

export class RequestTable {
  readonly requests = new Map<number, RequestInfo>();
  private readonly byId = new Map<string, number>();
  private next = 0;
  /** Recently seen request indices, newest last (for the request list). */
  recent: number[] = [];
  /** Token ids currently held in request-end payloads. */
  endTokens = 0;

  constructor(
    readonly maxRequests: number,
    readonly maxEndTokens: number,
    private readonly host: RequestTableHost,
  ) {}

  index(id: string): number {
    return this.byId.get(id) ?? -1;
  }

  name(idx: number): string {
    return this.requests.get(idx)?.id ?? `#${idx}`;
  }

  /** The request named `id`, added when new; its time span widened to `t`. */
  touch(id: string, t: number): RequestInfo {
    let idx = this.byId.get(id);
    let info = idx === undefined ? undefined : this.requests.get(idx);
    if (!info) {
      idx = this.next++;
      info = { idx, id, firstT: t, lastT: t, status: 'seen' };
      this.byId.set(id, idx);
      this.requests.set(idx, info);
      this.recent.push(idx);
      if (this.recent.length > 1000) this.recent.splice(0, this.recent.length - 500);
      if (this.requests.size > this.maxRequests) this.sweep();
    } else if (t > info.lastT) info.lastT = t;
    else if (t < info.firstT) info.firstT = t;
    return info;
  }

  /** Records a request's end; past the token budget, the oldest ends lose their token ids. */
  end(e: RequestEnd): void {
    const info = this.touch(e.requestId, e.t);
    if (info.end) this.endTokens -= info.end.tokens.length;
    info.end = e;
    info.status = e.status;
    this.endTokens += e.tokens.length;
    if (this.endTokens > this.maxEndTokens) this.dropOldTokens();
  }

  /** Forgets requests nothing retained refers to; past the cap, the oldest regardless. */
  private sweep(): void {
    const horizon = this.host.oldestRetainedT();
    const target = Math.floor(this.maxRequests * 0.9);
    for (const [idx, info] of this.requests) {
      if (this.requests.size <= target) break;
      if (info.lastT < horizon) this.forget(idx, info);
    }
    for (const [idx, info] of this.requests) {
      if (this.requests.size <= this.maxRequests) break;
      this.forget(idx, info);
    }
  }

  /** Drops the token ids of the oldest finished requests until under the token budget (keeps their runs and times). */
  private dropOldTokens(): void {
    for (const info of this.requests.values()) {
      if (this.endTokens <= this.maxEndTokens * 0.9) break;
      if (!info.end || !info.end.tokens.length) continue;
      this.endTokens -= info.end.tokens.length;
      info.tokensDropped = info.end.tokens.length;
      info.end = { ...info.end, tokens: [], text: undefined };
    }
  }

  private forget(idx: number, info: RequestInfo): void {
    if (info.end) this.endTokens -= info.end.tokens.length;
    this.requests.delete(idx);
    this.byId.delete(info.id);
    this.host.forgotten(idx, info.end !== undefined);
  }
}
