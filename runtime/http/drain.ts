// The entry's graceful stop: new requests get 503, running answers get a grace period to finish, the rest end with an error.
import type { NextFunction, Request, Response } from 'express';
import { TokenRouterError } from '../errors.ts';
import { sendError } from './httpErrors.ts';

/** Answers ended at the deadline get this; a streamed one as an SSE error event, a unary one as a 503. */
const SHUTDOWN = () =>
  new TokenRouterError('unavailable', 'the server is shutting down and its grace period (limits.shutdownGraceMs) is over; retry the request', null, {
    retry_after_s: 1,
  });

/** How long ended answers get to flush their last bytes before the caller closes every connection. */
const FLUSH_MS = 1000;

/** Routes a load balancer or monitor reads during the drain: the probes answer 503 themselves, metrics stay readable. */
const OPEN_DURING_DRAIN = new Set(['/health', '/healthz', '/metrics']);

export interface DrainReport {
  /** Answers running when the drain began, and how many of them had to be ended at the deadline. */
  running: number;
  ended: number;
  waitedMs: number;
}

export class Drain {
  private draining = false;
  private readonly running = new Set<(e: TokenRouterError) => void>();
  private onIdle: (() => void) | null = null;
  private hurry: (() => void) | null = null;

  get active(): boolean {
    return this.draining;
  }

  /**
   * Registers a running answer until its response closes; `end` is called with the shutdown error
   * if it still runs at the deadline, and must cancel its request and end its response.
   */
  track(res: Response, end: (e: TokenRouterError) => void): void {
    this.running.add(end);
    res.once('close', () => {
      this.running.delete(end);
      if (this.running.size === 0) this.onIdle?.();
    });
  }

  /** Once draining, every request but the probes and metrics is refused with 503, Retry-After and Connection: close. */
  readonly gate = (req: Request, res: Response, next: NextFunction): void => {
    if (!this.draining || OPEN_DURING_DRAIN.has(req.path)) return next();
    // A kept-alive client reconnects, so a load balancer can send it to another replica.
    res.set('Connection', 'close');
    sendError(
      res,
      new TokenRouterError('unavailable', 'the server is shutting down; retry the request (on another replica, if there is one)', null, { retry_after_s: 1 }),
    );
  };

  /** Stops admitting, waits up to `graceMs` for the running answers, ends the rest; resolves once they have had FLUSH_MS to flush. */
  async drain(graceMs: number): Promise<DrainReport> {
    this.draining = true;
    const t0 = performance.now();
    const running = this.running.size;
    await new Promise<void>((resolve) => {
      if (this.running.size === 0) return resolve();
      const timer = setTimeout(resolve, graceMs);
      this.onIdle = this.hurry = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    const waitedMs = performance.now() - t0;
    const left = [...this.running];
    for (const end of left) end(SHUTDOWN());
    if (this.running.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FLUSH_MS);
        this.onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return { running, ended: left.length, waitedMs };
  }

  /** Ends the grace period now (a second signal): what still runs is ended at once. */
  endNow(): void {
    this.hurry?.();
  }
}
