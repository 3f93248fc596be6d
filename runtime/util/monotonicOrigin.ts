// Where this process's performance.now() starts on CLOCK_MONOTONIC, the one clock every process of the machine reads alike.

/**
 * `performance.now()` counts from the process's start on the monotonic clock, and
 * `process.hrtime` reads that clock itself, so their difference places this process's times on a
 * scale another process of the machine shares to the microsecond. (`performance.timeOrigin` is a
 * wall-clock reading taken at start: two processes' origins disagree by however far the wall clock
 * was slewed between their starts: a child's times mapped with them landed up to 4 ms past the
 * parent's own reading.)
 */
export function monotonicOriginMs(): number {
  return Number(process.hrtime.bigint()) / 1e6 - performance.now();
}
