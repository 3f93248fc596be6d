// The offline suite's per-thread CPU split: a busy worker thread is told apart from the main thread and the rest.
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { processThreadsCpuMs, threadSplit } from '../../runtime/util/threadCpu.ts';

/** A worker that spins until its own thread has used `ms` of CPU (read from its /proc stat), then exits. */
function spin(ms: number): Promise<void> {
  const src = `
    const fs = require('node:fs');
    const cpu = () => { const s = fs.readFileSync('/proc/thread-self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
    const start = cpu();
    let x = 0;
    while (cpu() - start < ${ms}) for (let i = 0; i < 1e5; i++) x += Math.sqrt(i);
    require('node:worker_threads').parentPort.postMessage(x);`;
  return new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true });
    w.once('message', () => resolve());
    w.once('error', reject);
  });
}

describe('threadSplit', () => {
  it('puts a busy worker in busiestMs, not in the main thread', async () => {
    const before = processThreadsCpuMs();
    expect(before.get(process.pid)).toBeGreaterThanOrEqual(0);
    // the worker must be sampled before it exits: its task entry goes with it
    let after = new Map<number, number>();
    const done = spin(300);
    const poll = setInterval(() => (after = processThreadsCpuMs()), 20);
    await done;
    clearInterval(poll);
    const split = threadSplit(before, after)!;
    expect(split.busiestMs).toBeGreaterThanOrEqual(200);
    expect(split.busiestMs).toBeGreaterThan(split.mainMs);
    expect(split.restMs).toBeGreaterThanOrEqual(0);
  });

  it('says null where there is nothing read', () => {
    expect(threadSplit(new Map(), new Map())).toBeNull();
  });
});
