import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { profileShares, type CpuProfile } from './profileShares.ts';

const ORT = '/x/node_modules/onnxruntime-node/dist/backend.js';
const frame = (functionName: string, url = '') => ({ functionName, url, scriptId: '0', lineNumber: 0, columnNumber: 0 });

/** A thread that, one sample per 100 ms: idles, runs the model (under a timer), packs tensors, collects garbage. */
function profile(samples: number[]): CpuProfile {
  return {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 3, 6, 7] },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('processImmediate', 'node:internal/timers'), children: [4] },
      { id: 4, callFrame: frame('', ORT), children: [5] },
      { id: 5, callFrame: frame('Tensor', '/x/node_modules/onnxruntime-common/dist/tensor-impl.js') },
      { id: 6, callFrame: frame('forward', 'file:///p/runtime/runner/onnxRunner.ts') },
      { id: 7, callFrame: frame('(garbage collector)') },
    ],
    startTime: 1_000_000,
    samples,
    timeDeltas: samples.map(() => 100_000),
  };
}

describe('profileShares: the model share of a thread on-CPU', () => {
  it('counts every sample under onnxruntime-node as the model, leaves idle out, and splits by time', () => {
    // 0.1 s … 2.0 s: second 0 idles half the time; second 1 is all model and packing
    const p = profile([2, 2, 2, 2, 2, 4, 5, 6, 7, 4, 4, 4, 4, 5, 6, 6, 4, 4, 4, 4]);
    const all = profileShares(p);
    expect(all.busySamples).toBe(15);
    expect(all.model).toBeCloseTo(11 / 15, 6); // ids 4 and 5 (a frame below the model's is the model)
    expect(all.gc).toBeCloseTo(1 / 15, 6);
    expect(all.top[0]).toEqual({ name: '(anonymous) backend.js', share: 9 / 15 });
    expect(all.timeline.map((s) => s.second)).toEqual([0, 1, 2]);
    expect(all.timeline[0].busy).toBeCloseTo(4 / 9, 6);
    const second1 = profileShares(p, 1, 2);
    expect(second1.busySamples).toBe(10);
    expect(second1.model).toBeCloseTo(8 / 10, 6);
  });

  it('prints each busy thread from the command line and leaves out the idle ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shares-'));
    writeFileSync(join(dir, 'busy.cpuprofile'), JSON.stringify(profile([4, 4, 6, 7])));
    writeFileSync(join(dir, 'idle.cpuprofile'), JSON.stringify(profile([2, 2, 2, 6])));
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'test/bench/profileShares.ts', join(dir, 'busy.cpuprofile'), join(dir, 'idle.cpuprofile'), '--min-busy', '2'],
      { encoding: 'utf8' },
    );
    expect(out).toContain('busy.cpuprofile: 4 busy samples; model (onnxruntime run) 50.0%, GC 25.0%');
    expect(out).not.toContain('idle.cpuprofile');
  });
});
