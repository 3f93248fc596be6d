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

/** Every thread of this process: tid → CPU ms (empty where there is no /proc). */
export function processThreadsCpuMs(): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    const ms = threadCpuMs(`/proc/self/task/${tid}/stat`);
    if (ms !== null) out.set(Number(tid), ms);
  }
  return out;
}

/**
 * CPU ms each thread spent between two `processThreadsCpuMs` readings, split as the offline loop
 * needs it: this process's main thread, its busiest other thread (a lone model worker's), the rest.
 */
export function threadSplit(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): { mainMs: number; busiestMs: number; restMs: number } | null {
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
