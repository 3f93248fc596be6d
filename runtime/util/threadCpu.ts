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
