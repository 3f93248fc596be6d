// The HTTP entry's cost per request outside the engine: a live request's time at the server (receipt to response sent) less its time in the cluster (admitted to ended).
import type { NextFunction, Request, Response } from 'express';
import type { TraceEvent } from '../../shared/trace.ts';
import type { TokenRouterService } from '../serve/tokenRouterService.ts';

/** Requests kept (≈ the last minute of a busy server). */
const KEEP = 4000;

export interface EntryCost {
  /** Mean ms a request spends at the server outside the cluster: body parse, template, admission, answer, send. */
  perRequestMs: number;
  /** Requests the figure rests on (those answered in the window, and those the trace saw end there). */
  requests: number;
}

/**
 * An evaluation submits to the cluster directly, so none of this is in its batches; in a closed loop
 * of c clients each request holds its client this long besides its time in the engine, and the
 * engine sees fewer than c in flight (Little's law, `predictServing`). Measured on the live
 * traffic's requests, never a constant: a slower entry or a longer answer moves it.
 */
export class EntryProfile {
  private readonly walls: { end: number; ms: number }[] = [];

  constructor(private readonly now: () => number) {}

  /** Times every inference request from the moment it reaches the server (before its body is read) to its answer's last byte. */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    const t0 = this.now();
    res.once('finish', () => {
      if (res.statusCode !== 200) return;
      const t = this.now();
      if (this.walls.length >= KEEP) this.walls.splice(0, KEEP / 4);
      this.walls.push({ end: t, ms: t - t0 });
    });
    next();
  };

  /**
   * Over the last `windowMs`, or the part of it `events` (oldest first) cover: mean wall at the
   * server less mean time in the cluster of the requests the trace saw end (those `live` picks: an
   * evaluation's own are no HTTP requests). Null without both (no HTTP traffic, or nothing tracing).
   */
  cost(events: readonly TraceEvent[], live: (requestId: string) => boolean, windowMs: number): EntryCost | null {
    // the same requests on both sides: a busy server's recent events may reach back less far than the window
    const first = events.length ? events[0] : undefined;
    const from = Math.max(this.now() - windowMs, first ? (first.type === 'batch' ? first.start : first.t) : Infinity);
    const walls = this.walls.filter((w) => w.end >= from);
    const inCluster = events.flatMap((e) => (e.type === 'request-end' && e.t >= from && e.status === 'done' && live(e.requestId) ? [e.t - e.admittedAt] : []));
    if (walls.length === 0 || inCluster.length === 0) return null;
    const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    return { perRequestMs: Math.max(0, mean(walls.map((w) => w.ms)) - mean(inCluster)), requests: Math.min(walls.length, inCluster.length) };
  }
}

const profiles = new WeakMap<TokenRouterService, EntryProfile>();

/** The service's one profile: the server mounts its middleware, the evaluation routes read it. */
export function entryProfileOf(service: TokenRouterService): EntryProfile {
  let p = profiles.get(service);
  if (!p) profiles.set(service, (p = new EntryProfile(() => service.cluster.clock.now())));
  return p;
}
