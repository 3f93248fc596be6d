// The HTTP entry's cost per request outside the engine: a live request's time at the server (receipt to response sent) less its own time in the cluster (admitted to ended).
import type { NextFunction, Request, Response } from 'express';
import type { TraceEvent } from '../../shared/trace.ts';
import type { TokenRouterService } from '../serve/tokenRouterService.ts';

/** Requests kept (≈ the last minute of a busy server). */
const KEEP = 4000;

export interface EntryCost {
  /** Mean ms a request spends at the server outside the cluster: body parse, template, admission, answer, send. */
  perRequestMs: number;
  /** Requests the figure rests on: those answered in the window whose end the trace saw. */
  requests: number;
}

/**
 * An evaluation submits to the cluster directly, so none of this is in its batches; in a closed loop
 * of c clients each request holds its client this long besides its time in the engine, and the
 * engine sees fewer than c in flight (Little's law, `predictServing`). Measured on the live
 * traffic's requests, never a constant: a slower entry or a longer answer moves it.
 */
export class EntryProfile {
  private readonly walls: { id: string; end: number; ms: number }[] = [];

  constructor(private readonly now: () => number) {}

  /** Times every inference request from the moment it reaches the server (before its body is read) to its answer's last byte, under the id it answered with. */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    const t0 = this.now();
    res.locals.receivedAt = performance.now();
    res.once('finish', () => {
      const id = res.getHeader('X-Request-Id');
      if (res.statusCode !== 200 || typeof id !== 'string') return;
      const t = this.now();
      if (this.walls.length >= KEEP) this.walls.splice(0, KEEP / 4);
      this.walls.push({ id, end: t, ms: t - t0 });
    });
    next();
  };

  /**
   * Over the last `windowMs`: each answered request's wall at the server less its own time in the
   * cluster, as the trace's `request-end` events (`events`) record it (its choices', first
   * admitted to last ended, when it asked for several), averaged over the requests found in both.
   * Pairing by id keeps both sides on the same requests whatever stretch the trace still holds
   * (unpaired means once set one algorithm's walls against another's time in the cluster, and
   * read 0 ms). Null when no answered request's end is in the trace (no HTTP traffic, or nothing
   * traced it).
   */
  cost(events: readonly TraceEvent[], windowMs: number): EntryCost | null {
    const from = this.now() - windowMs;
    const ended = new Map<string, { admittedAt: number; t: number }>();
    for (const e of events) if (e.type === 'request-end' && e.status === 'done') ended.set(e.requestId, { admittedAt: e.admittedAt, t: e.t });
    let sum = 0;
    let n = 0;
    for (const w of this.walls) {
      if (w.end < from) continue;
      const inCluster = clusterSpan(ended, w.id);
      if (inCluster === null) continue;
      sum += w.ms - inCluster;
      n++;
    }
    return n === 0 ? null : { perRequestMs: Math.max(0, sum / n), requests: n };
  }
}

/** A request's time in the cluster: its own, or (n > 1) from its first choice admitted to its last ended (choice k runs as `id-k`). */
function clusterSpan(ended: ReadonlyMap<string, { admittedAt: number; t: number }>, id: string): number | null {
  const one = ended.get(id);
  if (one) return one.t - one.admittedAt;
  let first = Infinity;
  let last = -Infinity;
  for (let k = 0; ; k++) {
    const c = ended.get(`${id}-${k}`);
    if (!c) break;
    first = Math.min(first, c.admittedAt);
    last = Math.max(last, c.t);
  }
  return last > first ? last - first : null;
}

const profiles = new WeakMap<TokenRouterService, EntryProfile>();

/** The service's one profile: the server mounts its middleware, the evaluation routes read it. */
export function entryProfileOf(service: TokenRouterService): EntryProfile {
  let p = profiles.get(service);
  if (!p) profiles.set(service, (p = new EntryProfile(() => service.cluster.clock.now())));
  return p;
}

/**
 * A unary answer's `Server-Timing: total;dur=MS` (W3C Server Timing): its time at this server from
 * receipt, before its body was read, to the answer. What a client's own wall time has beyond it is
 * the network and the client: the `clientMs` a prediction takes.
 */
export function serverTiming(res: Response): void {
  const t0 = res.locals.receivedAt;
  if (typeof t0 === 'number') res.set('Server-Timing', `total;dur=${(performance.now() - t0).toFixed(2)}`);
}
