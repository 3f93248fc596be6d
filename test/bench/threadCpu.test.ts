// The offline suite's per-thread CPU split: a busy worker thread is told apart from the main thread and the rest.
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import { machineBusyCores, machineCpuTicks, processSchedstat, processThreadsCpuMs, runqueueWait, threadSplit } from '../../runtime/util/threadCpu.ts';

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

describe('the machine and the run queue', () => {
  it("counts a spinning worker in the machine's busy cores", async () => {
    const before = machineCpuTicks()!;
    const t0 = performance.now();
    await spin(300);
    const cores = machineBusyCores(before, machineCpuTicks(), performance.now() - t0)!;
    expect(cores).toBeGreaterThan(0.5);
    expect(cores).toBeLessThanOrEqual(os.availableParallelism() + 0.1);
  });

  it('sees threads wait for a core when more spin than there are cores', async () => {
    const n = Math.min(os.availableParallelism() + 1, 17);
    const before = processSchedstat();
    let after = new Map<number, { runNs: number; waitNs: number }>();
    const all = Promise.all(Array.from({ length: n }, () => spin(250)));
    const poll = setInterval(() => (after = processSchedstat()), 20);
    await all;
    clearInterval(poll);
    const w = runqueueWait(before, after)!;
    expect(w.all).toBeGreaterThan(0.02);
    expect(w.all).toBeLessThan(1);
    expect(w.busiest).toBeGreaterThanOrEqual(0);
  });

  it('says null where there is nothing read', () => {
    expect(runqueueWait(new Map(), new Map())).toBeNull();
    expect(machineBusyCores(null, null, 100)).toBeNull();
  });
});
