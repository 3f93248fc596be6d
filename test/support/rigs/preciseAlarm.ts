// A one-shot alarm with sub-millisecond precision, kept by a worker thread, for the delaying relay.
import { Worker } from 'node:worker_threads';

/**
 * Node timers count whole milliseconds from a loop time cached at the start of the iteration, so a
 * 1 ms timer fires anywhere from 0 to 2 ms late; spinning the event loop for the rest costs a core.
 * A worker blocked in Atomics.wait (which takes fractional milliseconds) wakes on time and posts
 * one message, which wakes the owning loop within tens of microseconds.
 *
 * Shared slots: i32[0] arm generation, i32[1] never notified (the timed wait), i32[2] closed;
 * f64[2] the due time as performance.timeOrigin + performance.now() (one clock across threads).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const i32 = new Int32Array(workerData);
const f64 = new Float64Array(workerData);
const now = () => performance.timeOrigin + performance.now();
let seen = 0;
for (;;) {
  Atomics.wait(i32, 0, seen);
  if (Atomics.load(i32, 2)) break;
  seen = Atomics.load(i32, 0);
  const due = f64[2];
  for (let left = due - now(); left > 0 && !Atomics.load(i32, 2); left = due - now()) Atomics.wait(i32, 1, 0, left);
  if (Atomics.load(i32, 2)) break;
  parentPort.postMessage(seen);
}
`;

export interface PreciseAlarm {
  /** Fires `onAlarm` once at `dueMs` (this thread's performance.now() scale); only one alarm is pending at a time. */
  arm(dueMs: number): void;
  readonly armed: boolean;
  close(): Promise<void>;
}

export function createPreciseAlarm(onAlarm: () => void): PreciseAlarm {
  const sab = new SharedArrayBuffer(24);
  const i32 = new Int32Array(sab);
  const f64 = new Float64Array(sab);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: sab });
  let armed = false;
  let closed = false;
  worker.on('message', () => {
    armed = false;
    worker.unref();
    if (!closed) onAlarm();
  });
  // An idle alarm must not keep the process alive; an armed one has work due.
  worker.unref();
  return {
    arm(dueMs) {
      if (armed) throw new Error('alarm already armed');
      armed = true;
      worker.ref();
      f64[2] = performance.timeOrigin + dueMs;
      Atomics.add(i32, 0, 1);
      Atomics.notify(i32, 0);
    },
    get armed() {
      return armed;
    },
    async close() {
      closed = true;
      Atomics.store(i32, 2, 1);
      Atomics.notify(i32, 0);
      Atomics.notify(i32, 1);
      await worker.terminate();
    },
  };
}
