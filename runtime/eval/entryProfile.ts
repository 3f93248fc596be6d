// The HTTP entry's cost per request outside the engine: a live request's time at the server (receipt to response sent) less its own time in the cluster (admitted to ended).
import type { NextFunction, Request, Response } from 'express';
import type { TokenRouterService } from '../http/tokenRouterService.ts';

/** Requests kept (≈ the last minute of a busy server). */
const KEEP = 4000;

export interface EntryCost {
  /** Mean ms a request spends at the server outside the cluster: body parse, template, admission, answer, send. */
  perRequestMs: number;
  /** Requests the figure rests on: those answered in the window. */
  requests: number;
}

/** A request's own time in the cluster, set by its answer as each choice ends (first admitted to last ended). */
interface ClusterSpan {
  from: number;
  to: number;
}

/**
 * An evaluation submits to the cluster directly, so none of this is in its batches; in a closed loop
 * of c clients each request holds its client this long besides its time in the engine, and the
 * engine sees fewer than c in flight (Little's law, `predictServing`). Measured on the live
 * traffic's requests, never a constant: a slower entry or a longer answer moves it.
 */
export class EntryProfile {
  private readonly walls: { end: number; ms: number }[] = [];
  /** Evaluation runs going now. */
  private runs = 0;
  /** Measuring until then (the clock's ms) without a run: a prediction check watching, or a predict to come after a run. */
  private until = -Infinity;

  constructor(private readonly now: () => number) {}

  /**
   * Measuring only while it has a use: an evaluation runs (a predict reads the live traffic beside
   * it), a prediction check watches, or a run ended within `PREDICT_LIVE_WINDOW_MS`. Off otherwise,
   * so a plain server's requests pay one time stamp for Server-Timing and nothing else.
   */
  get measuring(): boolean {
    return this.runs > 0 || this.now() < this.until;
  }

  /** Measures until the returned function is called, and `thenMs` after it. */
  measureWhile(thenMs: number): () => void {
    this.runs++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.runs--;
      this.measureFor(thenMs);
    };
  }

  /** Measures for the next `ms` at least. */
  measureFor(ms: number): void {
    this.until = Math.max(this.until, this.now() + ms);
  }

  /**
   * Stamps every inference request's receipt for its Server-Timing header and, while measuring,
   * times it from the moment it reaches the server (before its body is read) to its answer's last
   * byte, less its own time in the cluster (`spentInCluster`). Paired here, on the request itself,
   * not later by id through the trace: an evaluation of a few hundred problems pushes a live
   * request's events out of the trace's window, and a prediction then lost the entry's cost.
   */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.receivedAt = performance.now();
    if (!this.measuring) return next();
    const t0 = this.now();
    res.once('finish', () => {
      const span = res.locals.clusterSpan as ClusterSpan | undefined;
      if (res.statusCode !== 200 || span === undefined) return;
      const t = this.now();
      if (this.walls.length >= KEEP) this.walls.splice(0, KEEP / 4);
      this.walls.push({ end: t, ms: Math.max(0, t - t0 - (span.to - span.from)) });
    });
    next();
  };

  /** Over the last `windowMs`: the mean of each answered request's time outside the cluster. Null when none was answered. */
  cost(windowMs: number): EntryCost | null {
    const from = this.now() - windowMs;
    let sum = 0;
    let n = 0;
    for (const w of this.walls) {
      if (w.end < from) continue;
      sum += w.ms;
      n++;
    }
    return n === 0 ? null : { perRequestMs: sum / n, requests: n };
  }
}

/** Adds one ended choice's time in the cluster (the cluster's clock, as EntryProfile's) to its request's span. */
export function spentInCluster(res: Response, result: { submittedAt: number; endedAt: number }): void {
  const span = res.locals.clusterSpan as ClusterSpan | undefined;
  if (span === undefined) res.locals.clusterSpan = { from: result.submittedAt, to: result.endedAt } satisfies ClusterSpan;
  else {
    span.from = Math.min(span.from, result.submittedAt);
    span.to = Math.max(span.to, result.endedAt);
  }
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
