// The one way the runtime reads time: a clock that also serves as XState's timer source.
/** Structurally XState's clock (setTimeout / clearTimeout), plus `now`. */
export interface Clock {
  /** Milliseconds since this clock's epoch. */
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  /** Wall time (performance.timeOrigin + performance.now()) at now() = 0: engine threads read the same time. */
  readonly origin?: number;
  /**
   * Runs `fn` once this turn of the event loop is over (what else reached the process in it has been
   * handled). Wall time only: virtual time has no turns, its events are already ordered.
   */
  endOfTurn?(fn: () => void): void;
}

/**
 * Wall time, for serving. Non-finite delays never fire (a deadline of Infinity means "no deadline").
 * `origin`: share another thread's epoch (its clock's `origin`), so trace times line up.
 */
export function createRealClock(origin?: number): Clock {
  // each thread has its own timeOrigin: an epoch passed across threads is absolute
  const epoch = origin === undefined ? performance.now() : origin - performance.timeOrigin;
  return {
    origin: performance.timeOrigin + epoch,
    now: () => performance.now() - epoch,
    setTimeout: (fn, ms) => (Number.isFinite(ms) ? setTimeout(fn, Math.max(0, ms)) : undefined),
    clearTimeout: (id) => {
      if (id !== undefined) clearTimeout(id as NodeJS.Timeout);
    },
    endOfTurn: (fn) => void setImmediate(fn),
  };
}
