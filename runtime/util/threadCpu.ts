// CPU time of one thread from Linux /proc (utime + stime, 10 ms ticks); null where there is no /proc.
import fs from 'node:fs';

/** `stat`: a thread's stat file, e.g. /proc/thread-self/stat (the calling thread) or /proc/self/task/<tid>/stat. */
export function threadCpuMs(stat = '/proc/thread-self/stat'): number | null {
  try {
    const s = fs.readFileSync(stat, 'utf8');
    // fields after the command's closing parenthesis: utime and stime are the 12th and 13th there, in clock ticks (100 per second on Linux)
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** A thread's schedstat: ns on a CPU and ns runnable but waiting for one; null without it. */
function schedstat(path: string): { runNs: number; waitNs: number } | null {
  try {
    const [run, wait] = fs.readFileSync(path, 'utf8').split(' ').map(Number);
    return { runNs: run, waitNs: wait };
  } catch {
    return null;
  }
}

/** Ms one thread spent runnable but waiting for a core, e.g. /proc/thread-self/schedstat (the calling thread); null without it. */
export function threadWaitMs(path = '/proc/thread-self/schedstat'): number | null {
  const s = schedstat(path);
  return s && s.waitNs / 1e6;
}

/** Every thread of this process: tid → what `read` finds in its /proc/self/task/<tid> folder (null, or a thread gone meanwhile: left out; empty without /proc). */
function eachThread<T>(read: (dir: string) => T | null): Map<number, T> {
  const out = new Map<number, T>();
  let tids: string[];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    const v = read(`/proc/self/task/${tid}`);
    if (v !== null) out.set(Number(tid), v);
  }
  return out;
}

/** Every thread of this process: tid → CPU ms (empty where there is no /proc). */
export function processThreadsCpuMs(): Map<number, number> {
  return eachThread((dir) => threadCpuMs(`${dir}/stat`));
}

/**
 * CPU ms each thread spent between two `processThreadsCpuMs` readings, split as the offline loop
 * needs it: this process's main thread, its busiest other thread (a lone model worker's), the rest.
 */
export function threadSplit(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): { mainMs: number; busiestMs: number; restMs: number } | null {
  if (after.size === 0) return null;
  let mainMs = 0;
  let busiestMs = 0;
  let total = 0;
  for (const [tid, ms] of after) {
    const d = ms - (before.get(tid) ?? 0);
    total += d;
    if (tid === process.pid) mainMs = d;
    else busiestMs = Math.max(busiestMs, d);
  }
  return { mainMs, busiestMs, restMs: total - mainMs - busiestMs };
}

/** What the machine's CPUs did since boot, in clock ticks (/proc/stat's first line): busy (everything but idle and iowait) and all. */
export function machineCpuTicks(): { busy: number; total: number } | null {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const v = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - v[3] - v[4], total };
  } catch {
    return null;
  }
}

/** Cores the whole machine kept busy between two `machineCpuTicks` readings `wallMs` apart (every process, not only this one). */
export function machineBusyCores(before: { busy: number } | null, after: { busy: number } | null, wallMs: number): number | null {
  return before && after && wallMs > 0 ? ((after.busy - before.busy) * 10) / wallMs : null;
}

/** Every thread of this process: tid → ns on a CPU and ns runnable but waiting for one (/proc/self/task/<tid>/schedstat; empty without it). */
export function processSchedstat(): Map<number, { runNs: number; waitNs: number }> {
  return eachThread((dir) => schedstat(`${dir}/schedstat`));
}

/** A thread group's time waiting for a core, as a share of its runnable time (on a core or waiting). */
export interface RunqueueWait {
  /** The main thread (a server's entry). */
  main: number;
  /** The busiest other thread (a lone engine's, or a model worker's). */
  busiest: number;
  /** Every thread of the process together. */
  all: number;
}

/** Run-queue wait between two `processSchedstat` readings (null without /proc): how much of its runnable time each group spent waiting for a CPU. */
export function runqueueWait(
  before: ReadonlyMap<number, { runNs: number; waitNs: number }>,
  after: ReadonlyMap<number, { runNs: number; waitNs: number }>,
): RunqueueWait | null {
  if (after.size === 0) return null;
  const share = (run: number, wait: number) => (run + wait > 0 ? wait / (run + wait) : 0);
  let main = { run: 0, wait: 0 };
  let busiest = { run: -1, wait: 0 };
  let run = 0;
  let wait = 0;
  for (const [tid, a] of after) {
    const b = before.get(tid) ?? { runNs: 0, waitNs: 0 };
    const d = { run: a.runNs - b.runNs, wait: a.waitNs - b.waitNs };
    run += d.run;
    wait += d.wait;
    if (tid === process.pid) main = d;
    else if (d.run > busiest.run) busiest = d;
  }
  return { main: share(main.run, main.wait), busiest: share(Math.max(0, busiest.run), busiest.wait), all: share(run, wait) };
}
