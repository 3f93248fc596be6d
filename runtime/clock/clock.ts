// The one way the runtime reads time: a clock that also serves as XState's timer source.
/** Structurally XState's clock (setTimeout / clearTimeout), plus `now`. */
export interface Clock {
  /** Milliseconds since this clock's epoch. */
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** Wall time, for serving. Non-finite delays never fire (a deadline of Infinity means "no deadline"). */
export function createRealClock(): Clock {
  const epoch = performance.now();
  return {
    now: () => performance.now() - epoch,
    setTimeout: (fn, ms) => (Number.isFinite(ms) ? setTimeout(fn, Math.max(0, ms)) : undefined),
    clearTimeout: (id) => {
      if (id !== undefined) clearTimeout(id as NodeJS.Timeout);
    },
  };
}
